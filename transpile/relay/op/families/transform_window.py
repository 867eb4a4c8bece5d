"""reverse_sequence and sliding_window (TVM's transform.cc / topi): per-row reversals and window views.

reverse_sequence(data, seq_lengths): for each index b of the batch axis, the first
seq_lengths[b] elements along the sequence axis are reversed (a length below 1 reverses nothing,
one past the axis reverses all of it, as topi clamps).
sliding_window(data, axis, window_shape, strides): every window of window_shape over the axes
from `axis` on, at the given strides; result shape data.shape[:axis] + positions + window_shape.
"""

from __future__ import annotations

import numpy as np

from ...ty import AnyDim, TensorType
from ..common import fmt_type
from ..registry import REQUIRED, AttrField, OpDef, OpPattern, RelationError, register
from .support import as_out, is_any, is_int, tensor_args, to_int, to_int_list
from .te_support import dtype_of, require, require_equal

__all__: list[str] = []


# ---------------------------------------------------------------- reverse_sequence


def _axes(attrs, ndim, op_name="reverse_sequence"):
    for name in ("batch_axis", "seq_axis"):
        value = attrs[name]
        if not -ndim <= value < ndim:
            raise RelationError(
                f"{op_name} only accepts `{name}` in [-data.ndim, data.ndim - 1], got {value} for rank {ndim}"
            )
    batch, seq = attrs.batch_axis % ndim, attrs.seq_axis % ndim
    if batch == seq:
        raise RelationError(f"{op_name}: batch_axis and seq_axis must differ, both are axis {batch}")
    return batch, seq


def _reverse_sequence_rel(arg_types, attrs):
    data, lengths = tensor_args(arg_types, 2, "reverse_sequence", ["data", "seq_lengths"])
    if lengths.ndim != 1 or not is_int(lengths.dtype):
        raise RelationError(f"reverse_sequence: seq_lengths must be a 1-D tensor of integers, got {fmt_type(lengths)}")
    batch, _ = _axes(attrs, data.ndim)
    size, count = data.shape[batch], lengths.shape[0]
    if not (is_any(size) or is_any(count)) and size != count:
        # TVM's message, spelling included (its tests match it).
        raise RelationError(
            "For reverse_sequnece seq_lengths size should match with dimension of batch axis, but got dimension "
            f"of batch_axis = {size}, and seq_length size = {count}"
        )
    return data


def _reverse_sequence_impl(args, attrs, out_type):
    data, lengths = np.asarray(args[0]), np.asarray(args[1]).astype(np.int64)
    batch, seq = _axes(attrs, data.ndim)
    if lengths.shape[0] != data.shape[batch]:
        raise ValueError(f"reverse_sequence: {lengths.shape[0]} seq_lengths for a batch axis of {data.shape[batch]}")
    n = data.shape[seq]
    out = data.copy()
    for b, length in enumerate(np.clip(lengths, 1, max(n, 1))):
        index = [slice(None)] * data.ndim
        index[batch] = b
        index[seq] = slice(0, int(length))
        out[tuple(index)] = np.flip(data[tuple(index)], axis=seq - (seq > batch))
    return as_out(out, out_type)


def _te_reverse_sequence(inputs, attrs, out_type):
    from tvm import te, tirx

    data, lengths = inputs
    batch, seq = _axes(attrs, len(data.shape))
    require_equal(
        [lengths.shape[0], data.shape[batch]], "reverse_sequence: seq_lengths must have one length per batch row"
    )
    n = data.shape[seq]

    def body(*index):
        length = lengths[index[batch]].astype("int64")
        length = tirx.min(tirx.max(length, tirx.const(1, "int64")), n.astype("int64"))
        j = index[seq].astype("int64")
        source = list(index)
        source[seq] = tirx.Select(j < length, length - 1 - j, j).astype(dtype_of(index[seq]))
        return data(*source)

    return te.compute(data.shape, body, name="T_reverse_sequence")


# ---------------------------------------------------------------- sliding_window


def _window_plan(shape, attrs, what):
    ndim = len(shape)
    if not 0 <= attrs.axis < ndim:
        raise RelationError(f"sliding_window: axis {attrs.axis} is out of range for {what}")
    spanned = ndim - attrs.axis
    if len(attrs.window_shape) != spanned or len(attrs.strides) != spanned:
        raise RelationError(
            f"sliding_window: window_shape {list(attrs.window_shape)} and strides {list(attrs.strides)} need one entry "
            f"per axis from {attrs.axis} of {what}"
        )
    if min(attrs.window_shape) < 1 or min(attrs.strides) < 1:
        raise RelationError(
            f"sliding_window: window_shape {list(attrs.window_shape)} and strides {list(attrs.strides)} must be positive"
        )
    positions = []
    for extent, window, stride in zip(shape[attrs.axis :], attrs.window_shape, attrs.strides):
        if is_any(extent):
            positions.append(AnyDim())
        elif extent < window:
            raise RelationError(f"sliding_window: a window of {list(attrs.window_shape)} does not fit in {what}")
        else:
            positions.append((extent - window) // stride + 1)
    return positions


def _sliding_window_rel(arg_types, attrs):
    (data,) = tensor_args(arg_types, 1, "sliding_window", ["data"])
    positions = _window_plan(data.shape, attrs, fmt_type(data))
    return TensorType((*data.shape[: attrs.axis], *positions, *attrs.window_shape), data.dtype)


def _sliding_window_impl(args, attrs, out_type):
    data = np.asarray(args[0])
    try:
        _window_plan(data.shape, attrs, f"an array of shape {data.shape}")
    except RelationError as error:
        raise ValueError(str(error)) from None
    spanned = tuple(range(attrs.axis, data.ndim))
    views = np.lib.stride_tricks.sliding_window_view(data, tuple(attrs.window_shape), axis=spanned)
    index = (slice(None),) * attrs.axis + tuple(slice(None, None, s) for s in attrs.strides)
    return as_out(views[index], out_type)


def _te_sliding_window(inputs, attrs, out_type):
    from tvm import te, tirx

    (data,) = inputs
    spanned = len(data.shape) - attrs.axis
    positions = []
    for extent, window, stride in zip(data.shape[attrs.axis :], attrs.window_shape, attrs.strides):
        require(extent >= window, "sliding_window: the window does not fit in the data")
        positions.append(tirx.floordiv(extent - window, stride) + 1)

    def body(*index):
        outer = list(index[: attrs.axis])
        place, offset = index[attrs.axis : attrs.axis + spanned], index[attrs.axis + spanned :]
        return data(*outer, *[p * s + o for p, s, o in zip(place, attrs.strides, offset)])

    shape = [*data.shape[: attrs.axis], *positions, *attrs.window_shape]
    return te.compute(shape, body, name="T_sliding_window")


# ---------------------------------------------------------------- registration

register(
    OpDef(
        "reverse_sequence",
        2,
        _reverse_sequence_rel,
        OpPattern.INJECTIVE,
        _reverse_sequence_impl,
        attrs=(AttrField("seq_axis", 1, to_int), AttrField("batch_axis", 0, to_int)),
        te_impl=_te_reverse_sequence,
        extras={"input_names": ("data", "seq_lengths"), "support_level": 3},
        description="Reverse the first seq_lengths[b] elements along seq_axis of each row b of batch_axis.",
    )
)
register(
    OpDef(
        "sliding_window",
        1,
        _sliding_window_rel,
        OpPattern.OPAQUE,
        _sliding_window_impl,
        attrs=(
            AttrField("axis", REQUIRED, to_int, "the first axis the window spans"),
            AttrField("window_shape", REQUIRED, to_int_list, "window extent along each axis from `axis` on"),
            AttrField("strides", REQUIRED, to_int_list, "window step along each of those axes"),
        ),
        te_impl=_te_sliding_window,
        extras={"support_level": 3},
        description="Every window of window_shape over the axes from `axis` on, at the given strides.",
    )
)
