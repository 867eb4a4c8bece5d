"""Gradients of the shape operators: reshapes, transposes, broadcasts, joins and splits, tiling and reversal."""

from __future__ import annotations

from ...expr import Tuple, TupleGetItem
from ...ty import TupleType
from . import register_gradient
from ._support import GradientError, inverse_permutation, op, static_shape, tensor_type, unbroadcast


def _reshape_back(orig, grad):
    """Any operator that only regroups elements: the gradient takes the input's shape back."""
    return [op("reshape_like", grad, orig.args[0])] + [None] * (len(orig.args) - 1)


for _name in ("reshape", "reshape_like", "contrib_reverse_reshape", "squeeze", "expand_dims", "nn.batch_flatten"):
    register_gradient(_name, _reshape_back)


@register_gradient("transpose")
def _transpose(orig, grad):
    ndim = len(tensor_type(orig.args[0]).shape)
    axes = orig.attrs.axes
    if not axes:
        return [op("transpose", grad)]  # the reversal is its own inverse
    axes = [a + ndim if a < 0 else a for a in axes]
    return [op("transpose", grad, axes=inverse_permutation(axes))]


@register_gradient("broadcast_to")
def _broadcast_to(orig, grad):
    return [unbroadcast(grad, orig.args[0], orig)]


@register_gradient("broadcast_to_like")
def _broadcast_to_like(orig, grad):
    return [unbroadcast(grad, orig.args[0], orig), None]


@register_gradient("collapse_sum_like")
def _collapse_sum_like(orig, grad):
    return [op("broadcast_to_like", grad, orig.args[0]), None]


# ---------------------------------------------------------------- joins and splits


def _fields(value, count: int) -> list:
    if isinstance(value, Tuple):
        return list(value.fields)
    return [TupleGetItem(value, i) for i in range(count)]


def _tuple_type(expr, op_name: str) -> TupleType:
    ty = getattr(expr, "checked_type_", None)
    if not isinstance(ty, TupleType):
        raise GradientError(f"the gradient of {op_name} needs the type of its tuple argument, got {ty}")
    return ty


@register_gradient("concatenate")
def _concatenate(orig, grad):
    fields = _tuple_type(orig.args[0], "concatenate").fields
    ndim = len(fields[0].shape)
    axis = orig.attrs.axis + ndim if orig.attrs.axis < 0 else orig.attrs.axis
    if len(fields) == 1:
        return [Tuple([grad])]
    bounds, total = [], 0
    for field in fields[:-1]:
        extent = field.shape[axis]
        if not isinstance(extent, int):
            raise GradientError(f"the gradient of concatenate needs static extents on axis {axis}, got {field}")
        total += extent
        bounds.append(total)
    return [op("split", grad, indices_or_sections=bounds, axis=axis)]


@register_gradient("stack")
def _stack(orig, grad):
    count = len(_tuple_type(orig.args[0], "stack").fields)
    ndim = len(tensor_type(orig).shape)
    axis = orig.attrs.axis + ndim if orig.attrs.axis < 0 else orig.attrs.axis
    pieces = op("split", grad, indices_or_sections=count, axis=axis)
    return [Tuple([op("squeeze", TupleGetItem(pieces, i), axis=[axis]) for i in range(count)])]


@register_gradient("split")
def _split(orig, grad):
    count = len(_tuple_type(orig, "split").fields)
    return [op("concatenate", Tuple(_fields(grad, count)), axis=orig.attrs.axis)]


# ---------------------------------------------------------------- tiling, repetition, reversal


@register_gradient("tile")
def _tile(orig, grad):
    x = orig.args[0]
    shape = static_shape(x, "tile")
    reps = list(orig.attrs.reps)
    rank = max(len(shape), len(reps))
    shape_full = [1] * (rank - len(shape)) + list(shape)
    reps = [1] * (rank - len(reps)) + reps
    # The tiled axis i holds reps[i] copies of extent shape[i]: split it in two and sum the copies.
    interleaved = [n for pair in zip(reps, shape_full) for n in pair]
    summed = op("sum", op("reshape", grad, newshape=interleaved), axis=list(range(0, 2 * rank, 2)))
    return [op("reshape_like", summed, x)]


@register_gradient("repeat")
def _repeat(orig, grad):
    x = orig.args[0]
    shape = static_shape(x, "repeat")
    if orig.attrs.axis is None:
        raise GradientError("the gradient of repeat needs an axis")
    axis = orig.attrs.axis + len(shape) if orig.attrs.axis < 0 else orig.attrs.axis
    # Each element is repeated `repeats` times in a row: split the axis (extent, repeats), sum the repeats.
    split_shape = list(shape[:axis]) + [shape[axis], orig.attrs.repeats] + list(shape[axis + 1 :])
    return [op("sum", op("reshape", grad, newshape=split_shape), axis=[axis + 1])]


@register_gradient("reverse")
def _reverse(orig, grad):
    return [op("reverse", grad, axis=orig.attrs.axis)]
