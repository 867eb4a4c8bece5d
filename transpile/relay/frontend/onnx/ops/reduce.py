"""Converters of ONNX reductions: Reduce* (axes as attribute or input), ArgMax/ArgMin, CumSum/CumProd."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim
from ..converters import converter
from .shape_values import int_list_input, int_scalar_input, normalize_axes, normalize_axis

# The opset from which each reduction takes its axes as an input instead of an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}
_AXES_INPUT_DEFAULT = 18


def reduction_axes(ctx, ndim: int) -> list[int] | None:
    """The reduced axes, sorted; None for all of them; [] when the node is a no-op (noop_with_empty_axes)."""
    if ctx.opset >= _AXES_INPUT_SINCE.get(ctx.op_type, _AXES_INPUT_DEFAULT):
        axes = int_list_input(ctx, 1, "axes")
    else:
        axes = ctx.attr("axes")
    if not axes:
        return [] if ctx.attr("noop_with_empty_axes", 0) else None
    return sorted(normalize_axes(ctx, axes, ndim))


def _reduced_shape(shape, axes, keepdims):
    reduced = set(range(len(shape)) if axes is None else axes)
    return [1 if i in reduced else d for i, d in enumerate(shape) if keepdims or i not in reduced]


def _empty_fill(op_type, dtype):
    """What ONNX's reference gives when reducing an empty set of elements."""
    kind = np.dtype(dtype).kind
    if op_type == "ReduceMax":
        return False if kind == "b" else (np.iinfo(dtype).min if kind in "iu" else -np.inf)
    if op_type == "ReduceMin":
        return True if kind == "b" else (np.iinfo(dtype).max if kind in "iu" else np.inf)
    if op_type == "ReduceProd":
        return 1
    if op_type in ("ReduceLogSum", "ReduceLogSumExp"):
        return -np.inf
    if op_type == "ReduceMean":
        return np.nan
    return 0


def _reduce(b, relay_op, x, axes, keepdims):
    return b.call(relay_op, x, axis=axes, keepdims=keepdims)


def _log_sum_exp(b, x, axes, keepdims):
    # Shifted by the maximum so that large inputs do not overflow exp; an all -inf slice gives -inf.
    peak = b.call("max", x, axis=axes, keepdims=True)
    finite_peak = b.call("where", b.call("isinf", peak), b.call("zeros_like", peak), peak)
    total = b.call("sum", b.call("exp", b.call("subtract", x, finite_peak)), axis=axes, keepdims=True)
    result = b.call("add", b.call("log", total), finite_peak)
    return result if keepdims else b.call("squeeze", result, axis=axes)


_NOOP = {
    "ReduceL1": lambda b, x: b.call("abs", x),
    "ReduceL2": lambda b, x: b.call("abs", x),
    "ReduceSumSquare": lambda b, x: b.call("multiply", x, x),
    "ReduceLogSum": lambda b, x: b.call("log", x),
    "ReduceLogSumExp": lambda b, x: x,  # log(exp(x)), without the overflow
    **{op: (lambda b, x: x) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd")},
}

_SIMPLE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod"}


def _reduction(op_type):
    def convert(ctx):
        b = ctx.b
        x = ctx.input(0)
        shape = b.shape_of(x)
        keepdims = bool(ctx.attr("keepdims", 1))
        axes = reduction_axes(ctx, len(shape))
        if axes == []:
            # No reduction, but the elementwise part of the definition still applies (ReduceL1 is |x|).
            return _NOOP[op_type](b, x)
        reduced = range(len(shape)) if axes is None else axes
        if any(not isinstance(shape[a], AnyDim) and shape[a] == 0 for a in reduced):
            out_shape = _reduced_shape(shape, axes, keepdims)
            if any(isinstance(d, AnyDim) for d in out_shape):
                raise ctx.unsupported("reducing an empty axis of a tensor with unknown dimensions")
            return b.const(np.full(out_shape, _empty_fill(op_type, b.dtype_of(x))).astype(b.dtype_of(x)))
        axis = None if axes is None else list(axes)
        if op_type in _SIMPLE:
            return _reduce(b, _SIMPLE[op_type], x, axis, keepdims)
        if op_type == "ReduceL1":
            return _reduce(b, "sum", b.call("abs", x), axis, keepdims)
        if op_type == "ReduceSumSquare":
            return _reduce(b, "sum", b.call("multiply", x, x), axis, keepdims)
        if op_type == "ReduceL2":
            return b.call("sqrt", _reduce(b, "sum", b.call("multiply", x, x), axis, keepdims))
        if op_type == "ReduceLogSum":
            return b.call("log", _reduce(b, "sum", x, axis, keepdims))
        if op_type == "ReduceLogSumExp":
            return _log_sum_exp(b, x, axis, keepdims)
        raise b.error(f"no reduction named {op_type} (importer bug)")

    return convert


for _op_type in (
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
):
    converter(_op_type)(_reduction(_op_type))


def _arg_reduction(relay_op):
    def convert(ctx):
        b = ctx.b
        x = ctx.input(0)
        axis = normalize_axis(ctx, ctx.attr("axis", 0), b.ndim_of(x))
        indices = b.call(
            relay_op,
            x,
            axis=[axis],
            keepdims=bool(ctx.attr("keepdims", 1)),
            select_last_index=bool(ctx.attr("select_last_index", 0)),
        )
        return b.call("cast", indices, dtype="int64")

    return convert


converter("ArgMax")(_arg_reduction("argmax"))
converter("ArgMin")(_arg_reduction("argmin"))


def _scan(relay_op):
    def convert(ctx):
        b = ctx.b
        x = ctx.input(0)
        ctx.input(1)  # required
        axis = normalize_axis(ctx, int_scalar_input(ctx, 1, "axis"), b.ndim_of(x))
        reverse = bool(ctx.attr("reverse", 0))
        if reverse:
            x = b.call("reverse", x, axis=axis)
        result = b.call(relay_op, x, axis=axis, exclusive=bool(ctx.attr("exclusive", 0)))
        return b.call("reverse", result, axis=axis) if reverse else result

    return convert


converter("CumSum")(_scan("cumsum"))
converter("CumProd")(_scan("cumprod"))
