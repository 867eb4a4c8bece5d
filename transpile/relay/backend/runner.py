"""Compiling a Relay function or expression with the backend TVM-style executors run on.

Every executor adapter (create_executor's kinds, relay.vm, relay.build, relay-aot's compile)
goes through `compile_callable`: one transpile backend, chosen by the environment variable
TRANSPILE_TVM_BACKEND (interpreter | python | cpp | tir; default interpreter) when the executor
is created, so one test file runs unchanged on every backend.
"""

from __future__ import annotations

import itertools
import os

import numpy as np

from ...errors import TranspileError
from .values import ResultStyle, to_runtime

__all__ = ["BACKEND_ENV", "DEFAULT_BACKEND", "selected_backend", "compile_callable", "CompiledFunction", "host_target"]

BACKEND_ENV = "TRANSPILE_TVM_BACKEND"
DEFAULT_BACKEND = "interpreter"

# Targets whose code runs on the host CPU; transpile's backends all do.
_HOST_TARGET_KINDS = ("llvm", "c", "cpu", "ext_dev")

_entry_numbers = itertools.count()


def selected_backend() -> str:
    """The backend named by TRANSPILE_TVM_BACKEND (default: the reference interpreter)."""
    name = os.environ.get(BACKEND_ENV, "").strip() or DEFAULT_BACKEND
    from ...backends import backends

    known = backends()
    if name not in known:
        raise TranspileError(f"{BACKEND_ENV}={name!r} names no transpile backend (available: {', '.join(known)})")
    return name


def host_target(target) -> str:
    """The kind of a TVM target (a string, Target object or {kind: target} map), which must run on the host."""
    kinds = []
    if isinstance(target, dict):
        targets = list(target.values()) or [None]
    elif isinstance(target, (list, tuple)):
        targets = list(target) or [None]
    else:
        targets = [target]
    for one in targets:
        if one is None:
            kinds.append("llvm")
        elif isinstance(one, str):
            kinds.append(one.split()[0] if one.strip() else "llvm")
        else:
            kind = getattr(getattr(one, "kind", None), "name", None)
            if kind is None:
                raise TranspileError(f"expected a target name or tvm.target.Target, got {type(one).__name__}")
            kinds.append(kind)
    for kind in kinds:
        if kind not in _HOST_TARGET_KINDS:
            raise TranspileError(
                f"target '{kind}' is not available: transpile's executors run on the host CPU (use 'llvm')"
            )
    return kinds[0]


def _fresh_entry(mod) -> str:
    """A global name `mod` does not use, so compiling an expression never replaces the user's @main.

    The same name whenever it is free: a backend's build cache then recognises a program compiled again."""
    name = "tvm_compat_entry"
    while name in mod:
        name = f"tvm_compat_entry_{next(_entry_numbers)}"
    return name


class CompiledFunction:
    """A Relay function compiled by transpile, called with TVM-style values (positional or by name)."""

    def __init__(self, function, params, style: ResultStyle, name: str):
        self._function = function
        self.params = list(params)
        self.style = style
        self.name = name

    @property
    def param_names(self) -> list[str]:
        return [p.name_hint for p in self.params]

    def order_arguments(self, args, kwargs) -> list:
        """Positional arguments followed by keyword arguments in parameter order (TVM's _convert_args)."""
        if not kwargs:
            return list(args)
        names = self.param_names
        unknown = [key for key in kwargs if key not in names]
        if unknown:
            raise TranspileError(f"@{self.name} has no parameter named {', '.join(unknown)} (its parameters: {names})")
        ordered = list(args)
        for position, name in enumerate(names):
            if position < len(args):
                if name in kwargs:
                    raise TranspileError(
                        f"argument %{name} of @{self.name} given both by position ({position}) and by name"
                    )
            elif name in kwargs:
                ordered.append(kwargs[name])
            else:
                raise TranspileError(f"@{self.name} is missing its argument %{name}")
        return ordered

    def __call__(self, *args, **kwargs):
        ordered = self.order_arguments(args, kwargs)
        lists = self.style.lists
        runtime_args = [to_runtime(arg, lists) for arg in ordered]
        runtime_args = [
            _as_parameter(arg, param.type_annotation, self.style.kind) for arg, param in zip(runtime_args, self.params)
        ]
        result = self._function(*runtime_args)
        return self.style.convert(result)


def _shape_fits(shape: tuple, expected_shape) -> bool:
    """Whether an array of `shape` fits a tensor type's shape (`?` and symbolic dims fit any extent)."""
    if len(shape) != len(expected_shape):
        return False
    return all(not isinstance(dim, int) or dim == extent for dim, extent in zip(expected_shape, shape))


def _as_parameter(value, expected, kind: str):
    """An argument adapted to its parameter's annotated type as TVM's executors took it.

    The graph executor converted a tensor whose shape fits to the parameter's dtype: its set_input
    copied each input into a buffer of the graph's dtype (NDArray.copyfrom converts), so float64
    data fed a float32 graph silently. The debug and VM executors passed arrays to kernels that
    checked their dtype, so they stay strict; a shape that does not fit is left for the backend's
    clear type error. The VM accepted a one-field tuple (a Python list) for a tensor: it
    flattened tuple arguments into the fields of the primitive calls it made.
    """
    from ..ty import TensorType, TupleType

    if isinstance(expected, TensorType):
        if kind == "vm" and isinstance(value, tuple) and len(value) == 1 and isinstance(value[0], np.ndarray):
            value = value[0]
        if kind == "graph" and isinstance(value, np.ndarray) and value.dtype != np.dtype(expected.dtype):
            if _shape_fits(value.shape, expected.shape):
                return np.ascontiguousarray(value, dtype=expected.dtype)
        return value
    if isinstance(expected, TupleType) and isinstance(value, tuple) and len(value) == len(expected.fields):
        return tuple(_as_parameter(field, field_type, kind) for field, field_type in zip(value, expected.fields))
    return value


def compile_callable(target, mod=None, *, kind: str, params=None, backend: str | None = None) -> CompiledFunction:
    """`target` (None = @main of `mod`, a GlobalVar, or a closed relay.Function) compiled into a callable.

    `mod` is never modified: a Function is compiled under a fresh global name in a copy of it.
    `params` ({name: array}) binds parameters of the compiled function to constants, by name.
    `kind` (debug | vm | graph) chooses how results look (see values.py).
    """
    import transpile

    from ..analysis import free_vars
    from ..bind import bind_params_in_module
    from ..expr import Function, GlobalVar
    from ..module import IRModule

    module = mod.copy() if mod is not None else IRModule()
    if target is None:
        if "main" not in module:
            raise TranspileError("the module has no @main to evaluate (pass an expression or a module with @main)")
        entry = "main"
    elif isinstance(target, GlobalVar):
        if target not in module:
            raise TranspileError(f"the module has no function @{target.name_hint}")
        entry = target.name_hint
    elif isinstance(target, Function):
        unbound = free_vars(target)
        if unbound:
            names = ", ".join(f"%{v.name_hint}" for v in unbound)
            raise TranspileError(f"cannot evaluate a function with free variables ({names}); bind them with `binds`")
        entry = _fresh_entry(module)
        module[entry] = target
    else:
        raise TranspileError(f"expected a relay.Function, GlobalVar or None to compile, got {type(target).__name__}")
    if params:
        module = bind_params_in_module(module, {name: to_runtime(value) for name, value in params.items()}, entry)
    backend = backend or selected_backend()
    function = transpile.compile(module, backend=backend, entry=entry)
    return CompiledFunction(function, module[entry].params, ResultStyle(module, kind), entry)
