"""Function values of the interpreter (closures, constructors and operators used as values) and value text."""

from __future__ import annotations

import numpy as np

from ...runtime import ADTValue, RefValue

__all__ = ["Closure", "ConstructorFunction", "OpFunction", "FunctionCode", "UNSET", "describe_value", "short_value"]


class _Unset:
    """Marks a frame slot not yet written (a shared node not yet evaluated in this activation)."""

    __slots__ = ()

    def __repr__(self):
        return "<unset>"


UNSET = _Unset()


class FunctionCode:
    """A compiled Relay function: its frame layout and the Python closure evaluating its body.

    A frame is a list: slot 0 holds the enclosing frame (the captured environment), slots
    1..arity the parameters, the rest let/pattern variables and cached shared nodes.
    """

    __slots__ = (
        "name",
        "func",
        "arity",
        "template",
        "body",
        "params",
        "param_types",
        "interp",
    )

    def __init__(self, name, func, interp):
        self.name = name
        self.func = func
        self.arity = len(func.params)
        self.template = None
        self.body = None
        self.params = func.params
        self.param_types = [_type_of(p) for p in func.params]
        self.interp = interp


def _type_of(var):
    ty = getattr(var, "checked_type_", None)
    return ty if ty is not None else var.type_annotation


class Closure:
    """A Relay closure: code plus the frame it was created in. Calling it from Python converts
    the arguments like entry arguments and runs the body."""

    __slots__ = ("code", "env", "__weakref__")

    def __init__(self, code: FunctionCode, env):
        self.code = code
        self.env = env

    def __call__(self, *args):
        return self.code.interp.call_from_python(self, args)

    def __repr__(self):
        return f"<Relay closure {self.code.name}/{self.code.arity}>"


class ConstructorFunction:
    """An ADT constructor used as a first-class function value."""

    __slots__ = ("name", "arity")

    def __init__(self, name: str, arity: int):
        self.name = name
        self.arity = arity

    def __call__(self, *args):
        if len(args) != self.arity:
            from ...errors import EvaluationError

            raise EvaluationError(f"constructor {self.name} takes {self.arity} argument(s) but got {len(args)}")
        return ADTValue(self.name, args)

    def __repr__(self):
        return f"<Relay constructor {self.name}>"


class OpFunction:
    """A primitive operator used as a first-class function value."""

    __slots__ = ("opdef", "attrs", "out_type")

    def __init__(self, opdef, attrs, out_type):
        self.opdef = opdef
        self.attrs = attrs
        self.out_type = out_type

    def __call__(self, *args):
        return self.opdef.numpy_impl(list(args), self.attrs, self.out_type)

    def __repr__(self):
        return f"<Relay operator {self.opdef.name}>"


def describe_value(value) -> str:
    """What a Python value is, for error messages ("an array of shape (3,) and dtype float64")."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {tuple(value.shape)} and dtype {value.dtype}"
    if isinstance(value, np.generic):
        return f"a numpy {value.dtype} scalar"
    if isinstance(value, bool):
        return f"the bool {value}"
    if isinstance(value, (int, float, complex)):
        return f"the {type(value).__name__} {value!r}"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} value(s)"
    if isinstance(value, list):
        return f"a list of {len(value)} value(s)"
    if isinstance(value, ADTValue):
        return f"the ADT value {short_value(value)}"
    if isinstance(value, RefValue):
        return "a reference"
    if callable(value):
        return f"the function {short_value(value)}"
    return f"a {type(value).__name__}"


def short_value(value, budget: int = 120) -> str:
    """A bounded, non-recursive-safe rendering of a runtime value (long lists are cut)."""
    out: list[str] = []
    _render(value, out, [budget])
    text = "".join(out)
    return text if len(text) <= budget + 3 else text[:budget] + "..."


def _render(value, out, budget) -> None:
    if budget[0] <= 0:
        out.append("...")
        return
    if isinstance(value, ADTValue):
        out.append(value.constructor)
        if value.fields:
            out.append("(")
            for i, field in enumerate(value.fields):
                if i:
                    out.append(", ")
                budget[0] -= len(value.constructor) + 2
                _render(field, out, budget)
                if budget[0] <= 0:
                    break
            out.append(")")
        else:
            budget[0] -= len(value.constructor)
    elif isinstance(value, tuple):
        out.append("(")
        for i, field in enumerate(value):
            if i:
                out.append(", ")
            budget[0] -= 2
            _render(field, out, budget)
            if budget[0] <= 0:
                break
        out.append(")")
    elif isinstance(value, np.ndarray):
        if value.ndim == 0:
            text = f"{value.item()!r}"
        elif value.size <= 6:
            text = f"array({value.tolist()}, {value.dtype})"
        else:
            text = f"array(shape={tuple(value.shape)}, {value.dtype})"
        out.append(text)
        budget[0] -= len(text)
    elif isinstance(value, RefValue):
        out.append("ref(")
        budget[0] -= 5
        _render(value.value, out, budget)
        out.append(")")
    else:
        text = repr(value)
        out.append(text)
        budget[0] -= len(text)
