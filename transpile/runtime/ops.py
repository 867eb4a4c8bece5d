"""Relay operators for generated Python code, backed by the operator registry's numpy implementations.

Generated kernels call operators that have no obvious one-line numpy spelling through this
module, with Relay's own names and attributes plus the output type the compiler inferred:

    from transpile.runtime import ops
    y = ops.nn.conv2d(x, w, padding=(1, 1, 1, 1), channels=16, kernel_size=(3, 3),
                      out=((1, 16, 28, 28), "float32"))

`out` is `(shape, dtype)` (None for a dimension only known at run time) or a tuple of those for
operators with several outputs. Results are arrays of exactly the output dtype (0-d arrays for
scalars). Attributes are normalized once per distinct call site and cached.
"""

from __future__ import annotations

import numpy as np

from ..errors import EvaluationError

__all__ = ["call", "op"]


def _out_type(spec):
    from ..relay.ty import AnyDim, TensorType, TupleType

    if len(spec) == 2 and isinstance(spec[1], str):
        shape, dtype = spec
        return TensorType(tuple(AnyDim() if d is None else d for d in shape), dtype)
    return TupleType([_out_type(field) for field in spec])


def _finisher(out_type):
    from ..relay.ty import TensorType

    if isinstance(out_type, TensorType):
        dtype = np.dtype(out_type.dtype)
        return lambda value: np.asarray(value, dtype=dtype)
    fields = [_finisher(field) for field in out_type.fields]
    return lambda value: tuple(finish(v) for finish, v in zip(fields, value))


class Operator:
    """A registered Relay operator callable as `op(*inputs, out=spec, **attributes)`."""

    __slots__ = ("name", "_opdef", "_prepared")

    def __init__(self, name: str):
        from ..relay.op.registry import lookup

        opdef = lookup(name)
        if opdef is None:
            raise AttributeError(f"transpile.runtime.ops has no operator {name!r}")
        self.name = name
        self._opdef = opdef
        self._prepared: dict = {}

    def _prepare(self, attrs: dict, out):
        from ..relay.op.registry import normalize_attrs

        try:
            key = (tuple(attrs.items()), out)
            prepared = self._prepared.get(key)
        except TypeError:  # an unhashable attribute value: prepare it every time
            key, prepared = None, None
        if prepared is None:
            out_type = _out_type(out)
            prepared = (normalize_attrs(self._opdef, attrs), out_type, _finisher(out_type))
            if key is not None:
                self._prepared[key] = prepared
        return prepared

    def __call__(self, *inputs, out, **attrs):
        normalized, out_type, finish = self._prepare(attrs, out)
        try:
            with np.errstate(all="ignore"):
                return finish(self._opdef.numpy_impl(list(inputs), normalized, out_type))
        except (EvaluationError, RecursionError, MemoryError):
            raise
        except Exception as exc:  # the same report as the reference interpreter's
            raise EvaluationError(f"operator {self.name} failed: {type(exc).__name__}: {exc}") from exc

    def __repr__(self):
        return f"<transpile operator {self.name}>"


class _Namespace:
    """`ops.nn`, `ops.dyn`: the operators whose names start with this prefix."""

    __slots__ = ("_prefix", "__dict__")

    def __init__(self, prefix: str):
        self._prefix = prefix

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _resolve(f"{self._prefix}.{name}")
        setattr(self, name, value)
        return value


_cache: dict = {}


def _resolve(name: str):
    value = _cache.get(name)
    if value is None:
        from ..relay.op.registry import lookup, registered_ops

        if lookup(name) is not None:
            value = Operator(name)
        elif any(o.name.startswith(name + ".") for o in registered_ops()):
            value = _Namespace(name)
        else:
            raise AttributeError(f"transpile.runtime.ops has no operator or namespace {name!r}")
        _cache[name] = value
    return value


def op(name: str) -> Operator:
    """The operator named `name` (any Relay operator name, e.g. "nn.conv2d")."""
    value = _resolve(name)
    if not isinstance(value, Operator):
        raise AttributeError(f"{name!r} is an operator namespace, not an operator")
    return value


def call(name: str, *inputs, out, **attrs):
    """`op(name)(*inputs, out=out, **attrs)`."""
    return op(name)(*inputs, out=out, **attrs)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    # Not cached in globals(): operators named `any`, `all`, `sum` would shadow builtins here.
    return _resolve(name)
