"""Converters of ONNX control flow: If (folded, or a Relay `If`), Loop and Scan (unrolled at import).

Subgraphs are converted by the importer (`ctx.graph.convert_subgraph`) with their inputs bound to
Relay values, and see every value of the enclosing graph. A Loop is unrolled when its trip count
and its condition fold to constants at import, a Scan when its sequence length is static; both up
to `MAX_UNROLLED_ITERATIONS` iterations. Relay programs with data-dependent loops would need
recursion, which the compiled backends do not all run, so those stay unsupported.
"""

from __future__ import annotations

import numpy as np

from .... import expr as E
from ....ty import AnyDim, TupleType
from ..converters import converter
from .sequence import OnnxOptional, OnnxSequence
from .shape_values import needs_constant, normalize_axis

MAX_UNROLLED_ITERATIONS = 256


def _condition_value(b, condition):
    """The truth of a one-element condition tensor, or None when it is known only at run time."""
    value = b.value_of(condition)
    if value is None:
        return None
    value = np.asarray(value)
    if value.size != 1:
        raise b.error(f"the condition must hold one element, got shape {value.shape}")
    return bool(value.reshape(()))


# ---------------------------------------------------------------- If


def _flatten(values):
    """The tensors of a branch's outputs and the layout that rebuilds the outputs (sequences, optionals) from them."""
    tensors, layout = [], []
    for value in values:
        if isinstance(value, OnnxOptional):
            inner_tensors, inner_layout = _flatten([] if value.value is None else [value.value])
            layout.append(("optional", len(inner_tensors), tuple(inner_layout)))
            tensors.extend(inner_tensors)
        elif isinstance(value, OnnxSequence):
            layout.append(("sequence", len(value.items), value.dtype))
            tensors.extend(value.items)
        else:
            layout.append(("tensor", 1, None))
            tensors.append(value)
    return tensors, layout


def _rebuild(parts, layout):
    outputs, position = [], 0
    for kind, count, detail in layout:
        piece = parts[position : position + count]
        if kind == "optional":
            inner = _rebuild(piece, list(detail))
            outputs.append(OnnxOptional(inner[0] if inner else None))
        elif kind == "sequence":
            outputs.append(OnnxSequence(piece, detail))
        else:
            outputs.append(piece[0])
        position += count
    return outputs


@converter("If")
def if_(ctx):
    b = ctx.b
    condition = ctx.input(0)
    then_graph, else_graph = ctx.attr("then_branch"), ctx.attr("else_branch")
    if then_graph is None or else_graph is None:
        raise b.error("attributes then_branch and else_branch are required")
    taken = _condition_value(b, condition)
    if taken is not None:
        return ctx.graph.convert_subgraph(then_graph if taken else else_graph, {})
    then_values = ctx.graph.convert_subgraph(then_graph, {})
    else_values = ctx.graph.convert_subgraph(else_graph, {})
    then_tensors, then_layout = _flatten(then_values)
    else_tensors, else_layout = _flatten(else_values)
    if then_layout != else_layout:
        raise ctx.unsupported(
            "the branches give outputs of different kinds (tensors, sequences of other lengths, empty optionals)"
        )
    for i, (t, e) in enumerate(zip(then_tensors, else_tensors)):
        if b.type_of(t) != b.type_of(e):
            raise ctx.unsupported(
                f"the branches give output {i} different types ({b.type_of(t)} and {b.type_of(e)}); "
                "a Relay If needs one type"
            )
    if b.ndim_of(condition):
        condition = b.call("reshape", condition, newshape=())
    if b.dtype_of(condition) != "bool":
        condition = b.call("cast", condition, dtype="bool")
    if len(then_tensors) == 1:
        branch = E.If(condition, then_tensors[0], else_tensors[0])
        branch._set_checked_type(b.type_of(then_tensors[0]))
        parts = [branch]
    else:
        then_tuple, else_tuple = b.tuple(then_tensors), b.tuple(else_tensors)
        branch = E.If(condition, then_tuple, else_tuple)
        branch._set_checked_type(TupleType([b.type_of(t) for t in then_tensors]))
        parts = [b.get(branch, i) for i in range(len(then_tensors))]
    return _rebuild(parts, then_layout)


# ---------------------------------------------------------------- Loop


def _scalar_binding(b, value, info, dtype):
    """A constant for a body input declared as a scalar (rank 0, or rank 1 of one element)."""
    dims = info.type.tensor_type.shape.dim if info.type.HasField("tensor_type") else []
    shape = (1,) if len(dims) == 1 else ()
    return b.const(np.full(shape, value, dtype=dtype))


def _stack(b, items, axis):
    return b.call("stack", b.tuple(items), axis=axis)


@converter("Loop")
def loop(ctx):
    b = ctx.b
    body = ctx.attr("body")
    if body is None:
        raise b.error("attribute 'body' is required")
    trip_count = None
    if ctx.has_input(0):
        value = b.value_of(ctx.input(0))
        if value is None:
            raise needs_constant(ctx, "the trip count (the loop is unrolled at import)")
        trip_count = int(np.asarray(value).reshape(-1)[0])
    running = True
    if ctx.has_input(1):
        running = _condition_value(b, ctx.input(1))
        if running is None:
            raise needs_constant(ctx, "the initial loop condition (the loop is unrolled at import)")
    if trip_count is None and not ctx.has_input(1):
        raise b.error("a Loop with neither a trip count nor a condition never ends")
    carried = [ctx.input(i) for i in range(2, len(ctx.inputs))]
    inputs = list(body.input)
    if len(inputs) != 2 + len(carried):
        raise b.error(f"the body takes {len(inputs)} inputs for {len(carried)} loop-carried value(s)")
    scan_count = len(body.output) - 1 - len(carried)
    scans: list[list] = [[] for _ in range(scan_count)]
    iteration = 0
    while running and (trip_count is None or iteration < trip_count):
        if iteration >= MAX_UNROLLED_ITERATIONS:
            raise ctx.unsupported(
                f"the loop runs more than {MAX_UNROLLED_ITERATIONS} iterations; it is unrolled at import"
            )
        bindings = {
            inputs[0].name: _scalar_binding(b, iteration, inputs[0], "int64"),
            inputs[1].name: _scalar_binding(b, True, inputs[1], "bool"),
        }
        bindings.update({info.name: value for info, value in zip(inputs[2:], carried)})
        outputs = ctx.graph.convert_subgraph(body, bindings)
        running = _condition_value(b, outputs[0])
        if running is None:
            raise ctx.unsupported("the loop condition computed by the body is known only at run time")
        carried = outputs[1 : 1 + len(carried)]
        for collected, value in zip(scans, outputs[1 + len(carried) :]):
            collected.append(value)
        iteration += 1
    if scan_count and iteration == 0:
        raise ctx.unsupported("a loop that runs no iteration has scan outputs of unknown shape")
    return carried + [_stack(b, items, 0) for items in scans]


# ---------------------------------------------------------------- Scan


def _unroll_scan(ctx, body, states, scan_inputs, axes, directions, length):
    """Run `body` `length` times; (final states, per scan output the list of its per-iteration values)."""
    b = ctx.b
    if length > MAX_UNROLLED_ITERATIONS:
        raise ctx.unsupported(
            f"the scan runs {length} iterations, more than the {MAX_UNROLLED_ITERATIONS} unrolled at import"
        )
    names = [info.name for info in body.input]
    scans: list[list] = [[] for _ in range(len(body.output) - len(states))]
    for step in range(length):
        slices = []
        for x, axis, direction in zip(scan_inputs, axes, directions):
            position = length - 1 - step if direction else step
            slices.append(b.call("take", x, b.const(np.array(position, dtype="int64")), axis=axis))
        outputs = ctx.graph.convert_subgraph(body, dict(zip(names, list(states) + slices)))
        states = outputs[: len(states)]
        for collected, value in zip(scans, outputs[len(states) :]):
            collected.append(value)
    if length == 0 and scans:
        raise ctx.unsupported("a scan of length 0 has scan outputs of unknown shape")
    return list(states), scans


def _scan_length(ctx, scan_inputs, axes):
    b = ctx.b
    lengths = {b.shape_of(x)[a] for x, a in zip(scan_inputs, axes)}
    if len(lengths) != 1:
        raise b.error(f"the scan inputs have different sequence lengths {sorted(map(str, lengths))}")
    length = lengths.pop()
    if isinstance(length, AnyDim):
        raise b.error("the sequence length of a Scan must be known at import (it is unrolled)")
    return int(length)


@converter("Scan")
def scan(ctx):
    b = ctx.b
    body = ctx.attr("body")
    scan_inputs_count = ctx.attr("num_scan_inputs")
    if body is None or scan_inputs_count is None:
        raise b.error("attributes body and num_scan_inputs are required")
    if ctx.opset < 9:
        return _scan_batched(ctx, body, scan_inputs_count)
    values = [ctx.input(i) for i in range(len(ctx.inputs))]
    state_count = len(values) - scan_inputs_count
    states, scan_inputs = values[:state_count], values[state_count:]
    input_axes = ctx.attr("scan_input_axes") or [0] * scan_inputs_count
    input_axes = [normalize_axis(ctx, a, b.ndim_of(x)) for a, x in zip(input_axes, scan_inputs)]
    input_directions = ctx.attr("scan_input_directions") or [0] * scan_inputs_count
    length = _scan_length(ctx, scan_inputs, input_axes)
    states, scans = _unroll_scan(ctx, body, states, scan_inputs, input_axes, input_directions, length)
    output_axes = ctx.attr("scan_output_axes") or [0] * len(scans)
    output_directions = ctx.attr("scan_output_directions") or [0] * len(scans)
    stacked = []
    for items, axis, direction in zip(scans, output_axes, output_directions):
        axis = normalize_axis(ctx, axis, b.ndim_of(items[0]) + 1)
        stacked.append(_stack(b, items[::-1] if direction else items, axis))
    return states + stacked


def _scan_batched(ctx, body, scan_inputs_count):
    """Scan-8: every state and scan input has a leading batch axis; each batch entry scans on its own.

    An entry shorter than the others (sequence_lens) runs fewer iterations; its scan outputs are
    zero past its length.
    """
    b = ctx.b
    values = [ctx.input(i, required=False) for i in range(1, len(ctx.inputs))]
    state_count = len(values) - scan_inputs_count
    states, scan_inputs = values[:state_count], values[state_count:]
    directions = ctx.attr("directions") or [0] * scan_inputs_count
    length = _scan_length(ctx, scan_inputs, [1] * scan_inputs_count)
    batch = b.static_shape(scan_inputs[0], "a Scan-8 input")[0]
    lengths = [length] * batch
    if ctx.has_input(0):
        lengths = [int(v) for v in np.asarray(b.require_value(ctx.input(0), "sequence_lens")).reshape(-1)]
    final_states, outputs = [], []
    for entry in range(batch):
        index = b.const(np.array(entry, dtype="int64"))
        entry_states = [b.call("take", s, index, axis=0) for s in states]
        entry_inputs = [b.call("take", x, index, axis=0) for x in scan_inputs]
        if lengths[entry] < length:
            entry_inputs = [
                b.call("strided_slice", x, begin=[0], end=[lengths[entry]], strides=[1], axes=[0]) for x in entry_inputs
            ]
        entry_states, scans = _unroll_scan(
            ctx, body, entry_states, entry_inputs, [0] * scan_inputs_count, directions, lengths[entry]
        )
        stacked = []
        for items in scans:
            column = _stack(b, items, 0)
            if lengths[entry] < length:
                widths = [[0, length - lengths[entry]]] + [[0, 0]] * b.ndim_of(items[0])
                column = b.call("nn.pad", column, b.const(np.array(0, dtype=b.dtype_of(column))), pad_width=widths)
            stacked.append(column)
        final_states.append(entry_states)
        outputs.append(stacked)
    states = [_stack(b, [entry[i] for entry in final_states], 0) for i in range(state_count)]
    scans = [_stack(b, [entry[i] for entry in outputs], 0) for i in range(len(outputs[0]) if outputs else 0)]
    return states + scans
