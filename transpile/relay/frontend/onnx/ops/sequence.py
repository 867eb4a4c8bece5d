"""Converters of ONNX sequence and optional operators; a sequence is known at import as a list of Relay tensors.

Relay has no growable list of tensors the backends all run, and ONNX models use sequences mostly
to gather a known number of tensors (SplitToSequence → ConcatFromSequence, a Loop with a constant
trip count appending to a sequence). So at import a sequence is an `OnnxSequence`: its items,
each a Relay expression. Positions must be constants at import; a graph output that is a sequence
becomes a Relay tuple (a list for onnx's runner). An optional is likewise known at import to hold a
value or not (`OnnxOptional`).
"""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .shape_values import int_list_input, int_scalar_input, normalize_axis
from .values import relay_dtype


class OnnxSequence:
    """An ONNX sequence during import: the list of its tensors and their element type."""

    def __init__(self, items, dtype: str | None = None):
        self.items = list(items)
        self.dtype = dtype

    def as_expr(self, builder):
        """The sequence as a graph output: a tuple of its tensors."""
        return builder.tuple(self.items)

    def __len__(self):
        return len(self.items)


class OnnxOptional:
    """An ONNX optional during import: its value (a tensor or an OnnxSequence) or None when empty."""

    def __init__(self, value=None):
        self.value = value

    def as_expr(self, builder):
        if self.value is None:
            raise builder.error("an empty optional as a graph output has no Relay value")
        return self.value if not hasattr(self.value, "as_expr") else self.value.as_expr(builder)


def sequence_input(ctx, index: int) -> OnnxSequence:
    value = ctx.input(index)
    if not isinstance(value, OnnxSequence):
        raise ctx.b.error(f"input {index} must be a sequence, got a tensor")
    return value


def _element_dtype(ctx, items, declared=None):
    dtypes = {ctx.b.dtype_of(item) for item in items}
    if declared is not None:
        dtypes.add(declared)
    if len(dtypes) > 1:
        raise ctx.b.error(f"the tensors of a sequence must have one element type, got {sorted(dtypes)}")
    return dtypes.pop() if dtypes else None


def _position(ctx, index: int, length: int, default: int, inclusive_end: bool) -> int:
    position = int_scalar_input(ctx, index, "the sequence position")
    position = default if position is None else position
    upper = length if inclusive_end else length - 1
    if not -length <= position <= upper:
        raise ctx.b.error(f"position {position} is out of range for a sequence of {length} tensor(s)")
    return position + length if position < 0 else position


@converter("SequenceEmpty")
def sequence_empty(ctx):
    dtype = relay_dtype(ctx, ctx.attr("dtype"), "attribute 'dtype'") if ctx.has_attr("dtype") else "float32"
    return [OnnxSequence([], dtype)]


@converter("SequenceConstruct")
def sequence_construct(ctx):
    items = [ctx.input(i) for i in range(len(ctx.inputs))]
    return [OnnxSequence(items, _element_dtype(ctx, items))]


@converter("SequenceInsert")
def sequence_insert(ctx):
    sequence = sequence_input(ctx, 0)
    tensor = ctx.input(1)
    dtype = _element_dtype(ctx, [tensor], sequence.dtype)
    position = _position(ctx, 2, len(sequence), len(sequence), inclusive_end=True)
    items = list(sequence.items)
    items.insert(position, tensor)
    return [OnnxSequence(items, dtype)]


@converter("SequenceErase")
def sequence_erase(ctx):
    sequence = sequence_input(ctx, 0)
    if not sequence.items:
        raise ctx.b.error("cannot erase from an empty sequence")
    position = _position(ctx, 1, len(sequence), -1, inclusive_end=False)
    items = list(sequence.items)
    del items[position]
    return [OnnxSequence(items, sequence.dtype)]


@converter("SequenceAt")
def sequence_at(ctx):
    sequence = sequence_input(ctx, 0)
    if not ctx.has_input(1):
        raise ctx.b.error("input 1 (position) is required")
    return sequence.items[_position(ctx, 1, len(sequence), 0, inclusive_end=False)]


@converter("SequenceLength")
def sequence_length(ctx):
    return ctx.b.const(np.array(len(sequence_input(ctx, 0)), dtype="int64"))


@converter("ConcatFromSequence")
def concat_from_sequence(ctx):
    b = ctx.b
    sequence = sequence_input(ctx, 0)
    if not sequence.items:
        raise b.error("cannot concatenate an empty sequence (its output shape is unknown)")
    if not ctx.has_attr("axis"):
        raise b.error("attribute 'axis' is required")
    rank = b.ndim_of(sequence.items[0])
    if ctx.attr("new_axis", 0):
        axis = normalize_axis(ctx, ctx.attr("axis"), rank + 1)
        return b.call("stack", b.tuple(sequence.items), axis=axis)
    axis = normalize_axis(ctx, ctx.attr("axis"), rank)
    if len(sequence.items) == 1:
        return sequence.items[0]
    return b.call("concatenate", b.tuple(sequence.items), axis=axis)


@converter("SplitToSequence")
def split_to_sequence(ctx):
    b = ctx.b
    x = ctx.input(0)
    dims = b.shape_of(x)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(dims))
    length = b.static_shape(x, "the input of SplitToSequence")[axis]
    split = int_list_input(ctx, 1, "split")
    keep = True
    if split is None:
        sizes, keep = [1] * length, bool(ctx.attr("keepdims", 1))
    elif b.ndim_of(ctx.input(1)) == 0:
        if split[0] <= 0:
            raise b.error(f"the split size must be positive, got {split[0]}")
        sizes = [min(split[0], length - start) for start in range(0, length, split[0])]
    else:
        sizes = split
        if sum(sizes) != length or any(s < 0 for s in sizes):
            raise b.error(f"split sizes {sizes} do not add up to the axis size {length}")
    items, start = [], 0
    for size in sizes:
        item = b.call("strided_slice", x, begin=[start], end=[start + size], strides=[1], axes=[axis])
        items.append(item if keep else b.call("squeeze", item, axis=[axis]))
        start += size
    return [OnnxSequence(items, b.dtype_of(x))]


@converter("SequenceMap")
def sequence_map(ctx):
    b = ctx.b
    body = ctx.attr("body")
    if body is None:
        raise b.error("attribute 'body' is required")
    operands = [ctx.input(i) for i in range(len(ctx.inputs))]
    lengths = {len(v) for v in operands if isinstance(v, OnnxSequence)}
    if not isinstance(operands[0], OnnxSequence) or len(lengths) != 1:
        raise b.error(f"the input sequences must have one length, got {sorted(lengths)}")
    names = [info.name for info in body.input]
    if len(names) != len(operands):
        raise b.error(f"the body takes {len(names)} inputs for {len(operands)} operand(s)")
    results: list[list] = [[] for _ in body.output]
    for position in range(lengths.pop()):
        elements = [v.items[position] if isinstance(v, OnnxSequence) else v for v in operands]
        for collected, value in zip(results, ctx.graph.convert_subgraph(body, dict(zip(names, elements)))):
            collected.append(value)
    return [OnnxSequence(items, _element_dtype(ctx, items)) for items in results]


# ---------------------------------------------------------------- optionals


@converter("Optional")
def optional(ctx):
    return [OnnxOptional(ctx.input(0, required=False))]


@converter("OptionalHasElement")
def optional_has_element(ctx):
    value = ctx.input(0, required=False)
    present = value.value is not None if isinstance(value, OnnxOptional) else value is not None
    return ctx.b.const(np.array(present))


@converter("OptionalGetElement")
def optional_get_element(ctx):
    value = ctx.input(0)
    if not isinstance(value, OnnxOptional):
        return [value]
    if value.value is None:
        raise ctx.b.error("getting the element of an empty optional")
    return [value.value]
