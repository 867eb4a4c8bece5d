"""Shared pieces of the vision operators: TVM's builders (inputs with defaults) and type checks."""

from __future__ import annotations

from ....ty import AnyDim, TensorType
from ...common import expect_tensor, fmt_type
from ...registry import OpDef, RelationError, make_call


class VisionOpDef(OpDef):
    """An OpDef whose builder follows TVM's relay.vision Python function.

    Some inputs (thresholds, output limits) were optional Python numbers in TVM's builders, turned
    into constants: extras["input_defaults"] maps such an input's name to (default, dtype).
    extras["input_names"] names every input in order, extras["py_order"] the attributes in the
    Python order (after the inputs); extras["tuple_outputs"](attrs) is the TupleWrapper size or None.
    """

    def __call__(self, *args, **kwargs):
        from ....expr import Expr, TupleWrapper, const, to_expr

        names = list(self.input_names)
        order = list(self.extras.get("py_order", self.attr_names))
        params = names + order
        if len(args) > len(params):
            raise TypeError(f"{self.name} takes at most {len(params)} arguments, got {len(args)}")
        given = dict(zip(params, args))
        for key, value in kwargs.items():
            if key not in params:
                raise TypeError(f"{self.name} got an unexpected argument {key!r}")
            if key in given:
                raise TypeError(f"{self.name} got argument {key!r} twice")
            given[key] = value
        defaults = self.extras.get("input_defaults", {})
        inputs = []
        for name in names:
            if name in given:
                value = given.pop(name)
            elif name in defaults:
                value = defaults[name][0]
            else:
                raise TypeError(f"{self.name} is missing its input {name!r}")
            if name in defaults and not isinstance(value, Expr):
                value = const(value, defaults[name][1])
            inputs.append(to_expr(value))
        call = make_call(self.name, inputs, given)
        count = self.extras["tuple_outputs_of"](call.attrs) if "tuple_outputs_of" in self.extras else None
        return call if count is None else TupleWrapper(call, count)


def tensor_of_rank(ty, rank: int, op_name: str, what: str) -> TensorType:
    tensor = expect_tensor(ty, op_name, what)
    if tensor.ndim != rank:
        raise RelationError(f"{op_name}: {what} must be a {rank}-D tensor, got {fmt_type(tensor)}")
    return tensor


def scalar_tensor(ty, op_name: str, what: str) -> TensorType:
    """A threshold or limit input: a tensor of at most one element (TVM read its first value)."""
    tensor = expect_tensor(ty, op_name, what)
    if tensor.ndim > 1 or (tensor.ndim == 1 and not isinstance(tensor.shape[0], AnyDim) and tensor.shape[0] != 1):
        raise RelationError(f"{op_name}: {what} must be a scalar (or 1-element) tensor, got {fmt_type(tensor)}")
    return tensor


def same_dim(a, b) -> bool:
    return isinstance(a, AnyDim) or isinstance(b, AnyDim) or a == b


def first_value(array):
    """The value of a threshold/limit argument (a 0-d or 1-element array)."""
    import numpy as np

    return np.asarray(array).reshape(-1)[0]
