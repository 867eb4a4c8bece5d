"""Floating-point operation counts of kernels (2 per multiply-add), for GFLOP/s in profiles and benchmarks.

Only the multiply-accumulate operators are counted (convolutions, dense (packed too), matmul, batch_matmul):
they are where a network's arithmetic is, and their count does not depend on the schedule.
Elementwise work is not counted; a kernel without a counted operator has no FLOP count (None).
"""

from __future__ import annotations

import math

from ..relay.op.families.nn.te_common import blocked_axes

__all__ = ["conv_flops", "conv_geometry", "kernel_flops", "call_flops", "operator_calls", "COUNTED_OPS"]

COUNTED_OPS = (
    "nn.conv2d",
    "nn.conv1d",
    "nn.contrib_conv2d_NCHWc",
    "nn.conv2d_transpose",
    "nn.dense",
    "nn.contrib_dense_pack",
    "nn.matmul",
    "nn.batch_matmul",
)


def conv_flops(batch, out_channels, out_h, out_w, in_channels, groups, kernel_h, kernel_w) -> int:
    """2·N·K·OH·OW·C/groups·KH·KW: one multiply and one add per weight tap of each output element."""
    return 2 * batch * out_channels * out_h * out_w * (in_channels // groups) * kernel_h * kernel_w


def _shape(ty) -> list[int] | None:
    shape = getattr(ty, "shape", None)
    if shape is None:
        return None
    try:
        return [int(d) for d in shape]
    except (TypeError, ValueError):  # a `?` dimension: nothing to count statically
        return None


def _extent(shape, layout: str, letter: str) -> int:
    """The full size of a (possibly blocked) axis: NCHW16c, C -> shape[C] * 16."""
    return math.prod(dim for dim, axis in zip(shape, blocked_axes(layout)) if axis[-1].upper() == letter)


def conv_geometry(op_name: str, attrs, arg_types, out_type) -> dict | None:
    """The layout-free description of a 2-D convolution call (the same for NCHW and NCHW16c):
    in/out channels, input and output size, kernel size, stride, groups; None for other calls."""
    if op_name not in ("nn.conv2d", "nn.contrib_conv2d_NCHWc"):
        return None
    data, out = _shape(arg_types[0]), _shape(out_type)
    if data is None or out is None:
        return None
    data_layout, out_layout = attrs.data_layout, attrs.out_layout or attrs.data_layout
    kernel = [int(k) for k in attrs.kernel_size] if attrs.kernel_size else None
    if kernel is None:
        weight = _shape(arg_types[1])
        axes = blocked_axes(attrs.kernel_layout)
        kernel = [weight[axes.index("H")], weight[axes.index("W")]] if weight else [0, 0]
    return {
        "in_channels": _extent(data, data_layout, "C"),
        "out_channels": _extent(out, out_layout, "C"),
        "in_size": (_extent(data, data_layout, "H"), _extent(data, data_layout, "W")),
        "out_size": (_extent(out, out_layout, "H"), _extent(out, out_layout, "W")),
        "kernel": tuple(kernel),
        "stride": max(int(s) for s in attrs.strides),
        "groups": int(attrs.groups),
    }


def call_flops(op_name: str, attrs, arg_types, out_type) -> int | None:
    """FLOPs of one operator call from its argument and result types, or None if not counted."""
    if op_name not in COUNTED_OPS:
        return None
    out = _shape(out_type)
    args = [_shape(t) for t in arg_types]
    if out is None or any(a is None for a in args[:2]):
        return None
    out_elements = math.prod(out)
    if op_name in ("nn.conv2d", "nn.conv1d", "nn.contrib_conv2d_NCHWc"):
        # Each output element reads (weight elements / output channels) taps: C/groups·KH·KW;
        # counting by elements works for every layout, blocked ones included.
        out_layout = attrs.out_layout or attrs.data_layout
        channels = _extent(out, out_layout, "C")
        return 2 * out_elements * math.prod(args[1]) // max(channels, 1)
    if op_name == "nn.conv2d_transpose":
        # Each input element scatters into (weight elements / input channels) outputs.
        in_channels = _extent(args[0], attrs.data_layout, "C")
        return 2 * math.prod(args[0]) * math.prod(args[1]) // max(in_channels, 1)
    if op_name in ("nn.dense", "nn.contrib_dense_pack"):
        return 2 * out_elements * args[0][-1]
    if op_name == "nn.matmul":
        a = args[0]
        reduced = a[-2] if getattr(attrs, "transpose_a", False) and len(a) >= 2 else a[-1]
        return 2 * out_elements * reduced
    if op_name == "nn.batch_matmul":
        x = args[0]
        reduced = x[-2] if getattr(attrs, "transpose_a", False) else x[-1]
        return 2 * out_elements * reduced
    return None


def operator_calls(body):
    """Every operator call in a kernel body (a Relay expression), each once; iterative."""
    from ..relay import expr as rx

    seen, stack, calls = set(), [body], []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, rx.Call):
            calls.append(node)
            stack.extend(node.args)
        elif isinstance(node, rx.Tuple):
            stack.extend(node.fields)
        elif isinstance(node, rx.TupleGetItem):
            stack.append(node.tuple_value)
        elif isinstance(node, rx.Function):
            stack.append(node.body)
    return calls


def kernel_flops(kernel) -> int | None:
    """FLOPs of one run of an LIR Kernel (sum over its counted operators), or None if it has none."""
    total, counted = 0, False
    for call in operator_calls(kernel.body):
        name = getattr(call.op, "name", None)
        if name not in COUNTED_OPS:
            continue
        arg_types = [getattr(a, "checked_type_", None) or getattr(a, "checked_type", None) for a in call.args]
        flops = call_flops(name, call.attrs, arg_types, call.checked_type)
        if flops is not None:
            total, counted = total + flops, True
    return total if counted else None
