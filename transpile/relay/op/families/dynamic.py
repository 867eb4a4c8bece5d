"""The `dyn.*` operators: zeros, ones, full, reshape, topk and strided_slice with run-time shape arguments.

TVM's builders (relay.zeros, relay.full, relay.reshape, relay.topk, relay.strided_slice) made the
static operator when its shape argument was a Python value or a Constant, and the `dyn.` operator
taking that argument as a tensor input when it was any other expression (a variable, a computed
shape). `dynamic_form` below attaches that rule to each static operator; `make_call` applies it.
Their results have data-dependent shapes (`?` dims), so they have no TE lowering: backends that
compile to fixed-shape kernels report them as unsupported, the interpreter runs them.
"""

from __future__ import annotations

import numpy as np

from ...ty import AnyDim, TensorType
from ..common import fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, get, make_call, normalize_attrs, register
from .support import as_out, is_integral, tensor_args, to_bool, to_dtype, to_int, to_optional_dtype

__all__ = ["DynamicForm"]


# ---------------------------------------------------------------- relations


def _shape_input(shape: TensorType, op_name: str, what: str = "shape") -> int:
    """The length of a 1-D integer shape tensor (the rank of the shape it describes)."""
    if shape.ndim != 1 or isinstance(shape.shape[0], AnyDim):
        raise RelationError(f"{op_name}: {what} must be a 1-D tensor of static length, got {fmt_type(shape)}")
    if not is_integral(shape.dtype):
        raise RelationError(f"{op_name}: {what} must be a tensor of integers, got {fmt_type(shape)}")
    return int(shape.shape[0])


def _dyn_init_rel(op_name):
    def rel(arg_types, attrs):
        (shape,) = tensor_args(arg_types, 1, op_name, ["shape"])
        return TensorType([AnyDim()] * _shape_input(shape, op_name), attrs.dtype)

    return rel


def _dyn_full_rel(arg_types, attrs):
    fill, shape = tensor_args(arg_types, 2, "dyn.full", ["fill_value", "shape"])
    if fill.ndim != 0:
        raise RelationError(f"dyn.full: the fill value must be a scalar, got {fmt_type(fill)}")
    return TensorType([AnyDim()] * _shape_input(shape, "dyn.full"), attrs.dtype or fill.dtype)


def _dyn_reshape_rel(arg_types, attrs):
    data, newshape = tensor_args(arg_types, 2, "dyn.reshape", ["data", "newshape"])
    return TensorType([AnyDim()] * _shape_input(newshape, "dyn.reshape", "newshape"), data.dtype)


def _dyn_topk_rel(arg_types, attrs):
    data, k = tensor_args(arg_types, 2, "dyn.topk", ["data", "k"])
    if k.ndim != 0 or not is_integral(k.dtype):
        raise RelationError(f"dyn.topk: k must be an integer scalar, got {fmt_type(k)}")
    if not -data.ndim <= attrs.axis < data.ndim:
        raise RelationError(f"dyn.topk: axis {attrs.axis} is out of range for {fmt_type(data)}")
    if attrs.ret_type not in ("both", "values", "indices"):
        raise RelationError(f"dyn.topk: ret_type must be both, values or indices, got {attrs.ret_type!r}")
    shape = list(data.shape)
    shape[attrs.axis % data.ndim] = AnyDim()
    values, indices = TensorType(shape, data.dtype), TensorType(shape, attrs.dtype)
    if attrs.ret_type == "both":
        from ...ty import TupleType

        return TupleType([values, indices])
    return values if attrs.ret_type == "values" else indices


def _dyn_strided_slice_rel(arg_types, attrs):
    data, begin, end, strides = tensor_args(arg_types, 4, "dyn.strided_slice", ["data", "begin", "end", "strides"])
    count = _shape_input(begin, "dyn.strided_slice", "begin")
    for tensor, what in ((end, "end"), (strides, "strides")):
        _shape_input(tensor, "dyn.strided_slice", what)
    if count > data.ndim:
        raise RelationError(f"dyn.strided_slice: begin has {count} entries for {fmt_type(data)}")
    if attrs.slice_mode not in ("end", "size"):
        raise RelationError(f"dyn.strided_slice: slice_mode must be end or size, got {attrs.slice_mode!r}")
    # The axes begin covers get run-time extents; the rest are kept whole.
    return TensorType([AnyDim()] * count + list(data.shape[count:]), data.dtype)


# ---------------------------------------------------------------- numpy implementations


def _int_values(array, op_name: str, what: str) -> list[int]:
    values = np.asarray(array)
    if values.ndim > 1:
        raise ValueError(f"{op_name}: {what} must be a 1-D tensor, got shape {values.shape}")
    return [int(v) for v in values.reshape(-1)]


def _checked_shape(array, op_name: str) -> tuple[int, ...]:
    shape = tuple(_int_values(array, op_name, "shape"))
    if any(extent < 0 for extent in shape):
        raise ValueError(f"{op_name}: shape {list(shape)} has a negative extent")
    return shape


def _dyn_fill_impl(value, op_name):
    def impl(args, attrs, out_type):
        return as_out(np.full(_checked_shape(args[0], op_name), value), out_type)

    return impl


def _dyn_full_impl(args, attrs, out_type):
    return as_out(np.full(_checked_shape(args[1], "dyn.full"), np.asarray(args[0])), out_type)


def _static_impl(op_name: str, args, attrs: dict, out_type):
    """The static operator's implementation with the run-time values as its attributes."""
    opdef = get(op_name)
    return opdef.numpy_impl(args, normalize_attrs(opdef, attrs), out_type)


def _dyn_reshape_impl(args, attrs, out_type):
    newshape = _int_values(args[1], "dyn.reshape", "newshape")
    return _static_impl("reshape", args[:1], {"newshape": newshape, "allowzero": attrs.allowzero}, out_type)


def _dyn_topk_impl(args, attrs, out_type):
    static = {"k": int(np.asarray(args[1])), **{name: getattr(attrs, name) for name in ("axis", "ret_type", "is_ascend", "dtype")}}
    return _static_impl("topk", args[:1], static, out_type)


def _dyn_strided_slice_impl(args, attrs, out_type):
    begin, end, strides = (_int_values(a, "dyn.strided_slice", w) for a, w in zip(args[1:], ("begin", "end", "strides")))
    static = {"begin": begin, "end": end, "strides": strides, "slice_mode": attrs.slice_mode}
    return _static_impl("strided_slice", args[:1], static, out_type)


# ---------------------------------------------------------------- the builders' dispatch


class DynamicForm:
    """TVM's builder rule for one static operator: its `moved` attributes become inputs of `dyn_name`
    when one of them is an expression other than a Constant (a Constant is read as a static value)."""

    def __init__(self, dyn_name: str, moved: tuple[str, ...], kept: tuple[str, ...], defaults: dict | None = None):
        self.dyn_name = dyn_name
        self.moved = moved
        self.kept = kept
        self.defaults = defaults or {}

    def __call__(self, args: list, attrs: dict, span=None):
        """The `dyn.` call for a builder's inputs and attributes, or None when they are all static."""
        from ...expr import Constant, Expr, const

        values = {name: attrs.get(name, self.defaults.get(name)) for name in self.moved}
        for name, value in values.items():
            if isinstance(value, Constant):
                values[name] = value.data.tolist()
        if not any(isinstance(value, Expr) for value in values.values()):
            return None
        unknown = sorted(name for name, value in attrs.items() if value is not None and name not in self.moved + self.kept)
        if unknown:
            raise RelationError(
                f"{self.dyn_name}: attribute(s) {unknown} cannot be used when {', '.join(self.moved)} "
                "is a run-time expression (TVM's dynamic operator has no such attribute)"
            )
        inputs = [value if isinstance(value, Expr) else const(value) for value in values.values()]
        kept = {name: attrs[name] for name in self.kept if name in attrs}
        return make_call(self.dyn_name, [*args, *inputs], kept, span=span)


_DYNAMIC_FORMS = {
    "zeros": DynamicForm("dyn.zeros", ("shape",), ("dtype",)),
    "ones": DynamicForm("dyn.ones", ("shape",), ("dtype",)),
    "full": DynamicForm("dyn.full", ("shape",), ("dtype",)),
    "reshape": DynamicForm("dyn.reshape", ("newshape",), ("allowzero",)),
    "topk": DynamicForm("dyn.topk", ("k",), ("axis", "ret_type", "is_ascend", "dtype")),
    # TVM's dynamic strided_slice has no `axes`; its strides default to [1] as the builder's did.
    "strided_slice": DynamicForm(
        "dyn.strided_slice", ("begin", "end", "strides"), ("slice_mode",), defaults={"strides": [1]}
    ),
}


# ---------------------------------------------------------------- registration


def _register_all():
    for name, value in (("zeros", 0), ("ones", 1)):
        register(
            OpDef(
                f"dyn.{name}",
                1,
                _dyn_init_rel(f"dyn.{name}"),
                OpPattern.ELEMWISE,
                _dyn_fill_impl(value, f"dyn.{name}"),
                attrs=(AttrField("dtype", "float32", to_dtype),),
                extras={"input_names": ("shape",)},
            )
        )
    register(
        OpDef(
            "dyn.full",
            2,
            _dyn_full_rel,
            OpPattern.ELEMWISE,
            _dyn_full_impl,
            attrs=(AttrField("dtype", None, to_optional_dtype),),
            extras={"input_names": ("fill_value", "shape")},
        )
    )
    register(
        OpDef(
            "dyn.reshape",
            2,
            _dyn_reshape_rel,
            OpPattern.INJECTIVE,
            _dyn_reshape_impl,
            attrs=(AttrField("allowzero", False, to_bool),),
            extras={"input_names": ("data", "newshape")},
        )
    )
    register(
        OpDef(
            "dyn.topk",
            2,
            _dyn_topk_rel,
            OpPattern.OPAQUE,
            _dyn_topk_impl,
            attrs=(
                AttrField("axis", -1, to_int),
                AttrField("ret_type", "both", str),
                AttrField("is_ascend", False, to_bool),
                AttrField("dtype", "int32", to_dtype),
            ),
            extras={"input_names": ("data", "k")},
        )
    )
    register(
        OpDef(
            "dyn.strided_slice",
            4,
            _dyn_strided_slice_rel,
            OpPattern.INJECTIVE,
            _dyn_strided_slice_impl,
            attrs=(AttrField("slice_mode", "end", str),),
            extras={"input_names": ("data", "begin", "end", "strides")},
        )
    )
    for static_name, form in _DYNAMIC_FORMS.items():
        get(static_name).extras["dynamic_form"] = form


_register_all()
