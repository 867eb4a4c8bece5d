"""AlterOpLayout: NCHW convolutions become channel-blocked `nn.contrib_conv2d_NCHWc` (TVM's x86
alter_conv2d_layout plus the layout propagation of its AlterOpLayout / ConvertLayout).

    conv2d(x, w) [NCHW, OIHW]
      -> contrib_conv2d_NCHWc(layout_transform(x, NCHW, NCHW16c), layout_transform(w, OIHW, OIHW16i16o))
         [out NCHW16c]

The weight's layout_transform is of a constant, so FoldConstant (run after this pass) re-packs
the weights at compile time. Activations stay packed from one convolution to the next: elementwise
and broadcast operators (bias add, relu, clip, residual add, ...) and pooling run on the packed
tensor — a per-channel operand such as a (C, 1, 1) bias is re-laid out to (C/16, 1, 1, 16) —
and every other consumer gets the tensor converted back to NCHW by one layout_transform.

Channel block: the largest power of two up to the vector width (float32 lanes of the host's
widest vector register, 16 with AVX-512) dividing the channels; a conv whose channels have none
of at least 4 (and exceed the width) keeps NCHW. A depthwise conv (groups == channels, one
filter per channel) keeps the block of its input. Only float32 convolutions are converted, and
only in functions made of operator calls, tuples, constants and variables (the dataflow of a
CNN); other functions stay as they are.
"""

from __future__ import annotations

import functools

from .. import expr as E
from ..op.registry import OpPattern, lookup
from ..ty import TensorType
from .infra import FunctionPass
from .patterns import call, op_name, static_shape, type_of

__all__ = ["AlterOpLayout", "alter_op_layout", "channel_block"]

# Elementwise / broadcast operators whose attributes do not name axes or shapes.
_AGNOSTIC_WITH_ATTRS = {"cast", "clip", "nn.leaky_relu", "fixed_point_multiply", "reinterpret"}
_POOLS = {"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d"}
_PRIMAL = "NCHW"


def packed(block: int) -> str:
    return f"NCHW{block}c"


@functools.lru_cache(maxsize=None)
def host_float_lanes() -> int:
    """float32 lanes of the host's widest vector register (16 with AVX-512, 8 with AVX2, else 4)."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return 8
    if " avx512f" in flags:
        return 16
    if " avx2" in flags:
        return 8
    return 4


def channel_block(channels: int, lanes: int) -> int | None:
    """The block size for `channels`: the largest power of two <= lanes dividing them (at least 4),
    all of them when they fit in one vector (the 3 channels of an RGB image), else None."""
    block = lanes
    while block >= 4:
        if channels % block == 0:
            return block
        block //= 2
    return channels if channels <= lanes else None


def _is_dataflow(expr) -> bool:
    """Whether `expr` only has operator calls, tuples, projections, constants and variables."""
    seen, stack = set(), [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        kind = type(node)
        if kind is E.Call:
            if type(node.op) is not E.Op:
                return False
            stack.extend(node.args)
        elif kind is E.Tuple:
            stack.extend(node.fields)
        elif kind is E.TupleGetItem:
            stack.append(node.tuple_value)
        elif kind not in (E.Var, E.Constant):
            return False
    return True


class _LayoutRewriter:
    """Post-order rewrite; every result is (new expression, its channel block or None for plain NCHW)."""

    def __init__(self, lanes: int):
        self.lanes = lanes
        self.done: dict = {}  # original node -> (new expr, block)
        self.unpacked: dict = {}  # packed new expr -> its NCHW conversion (one per value)
        self.repacked: dict = {}  # (packed new expr, block) -> conversion

    # ----- conversions (each made once per value) ----------------------------------------------

    def primal(self, new, block):
        """The NCHW form of a rewritten value."""
        if block is None:
            return new
        if new not in self.unpacked:
            self.unpacked[new] = call("layout_transform", new, src_layout=packed(block), dst_layout=_PRIMAL)
        return self.unpacked[new]

    def in_block(self, new, block, wanted):
        """A 4-D value (rewritten) in NCHW{wanted}c."""
        if block == wanted:
            return new
        key = (new, wanted)
        if key not in self.repacked:
            src = _PRIMAL if block is None else packed(block)
            self.repacked[key] = call("layout_transform", new, src_layout=src, dst_layout=packed(wanted))
        return self.repacked[key]

    # ----- traversal ---------------------------------------------------------------------------

    def rewrite(self, expr):
        """The rewritten `expr`, in its original layout."""
        stack = [(expr, False)]
        while stack:
            node, ready = stack.pop()
            if node in self.done:
                continue
            children = _children(node)
            if not ready and children:
                stack.append((node, True))
                stack.extend((c, False) for c in children if c not in self.done)
                continue
            self.done[node] = self.visit(node)
        return self.primal(*self.done[expr])

    def visit(self, node):
        kind = type(node)
        if kind is E.Call:
            return self.visit_call(node)
        if kind is E.Tuple:
            fields = [self.primal(*self.done[f]) for f in node.fields]
            if all(f is g for f, g in zip(fields, node.fields)):
                return node, None
            return E.Tuple(fields, span=node.span), None
        if kind is E.TupleGetItem:
            value = self.primal(*self.done[node.tuple_value])
            if value is node.tuple_value:
                return node, None
            return E.TupleGetItem(value, node.index, span=node.span), None
        return node, None  # Var, Constant

    def visit_call(self, node):
        name = op_name(node)
        args = [self.done[a] for a in node.args]
        if name == "nn.conv2d":
            result = self.conv2d(node, args)
            if result is not None:
                return result
        elif any(block is not None for _, block in args):
            if name in _POOLS:
                return self.pool(node, args)
            result = self.broadcast(node, args)
            if result is not None:
                return result
        return self.unpacked_call(node, args)

    def unpacked_call(self, node, args):
        """`node` on its operands in NCHW (the node itself when none of them changed)."""
        plain = [self.primal(new, block) for new, block in args]
        if all(p is a for p, a in zip(plain, node.args)):
            return node, None
        return E.Call(node.op, plain, node.attrs, node.type_args, span=node.span), None

    # ----- rules ---------------------------------------------------------------------------------

    def conv2d(self, node, args):
        attrs = node.attrs
        data_type = type_of(node.args[0])
        if (
            attrs.data_layout != _PRIMAL
            or attrs.kernel_layout != "OIHW"
            or (attrs.out_layout or _PRIMAL) != _PRIMAL
            or static_shape(node.args[0]) is None
            or static_shape(node.args[1]) is None
            or not isinstance(data_type, TensorType)
            or data_type.ndim != 4
            or data_type.dtype != "float32"  # the packed schedules are written (and measured) for float32
            or type_of(node.args[1]).dtype != "float32"
        ):
            return None
        (data, data_block), (weight, _) = args
        in_channels = static_shape(node.args[0])[1]
        out_channels, weight_in, kh, kw = static_shape(node.args[1])
        groups = attrs.groups
        depthwise = groups > 1 and groups == in_channels == out_channels and weight_in == 1
        if groups != 1 and not depthwise:
            return None
        if data_block is not None and in_channels % data_block == 0:
            in_block = data_block
        else:
            in_block = channel_block(in_channels, self.lanes)
        out_block = in_block if depthwise else channel_block(out_channels, self.lanes)
        if in_block is None or out_block is None:
            return None
        kernel_layout = f"OIHW1i{out_block}o" if depthwise else f"OIHW{in_block}i{out_block}o"
        conv = call(
            "nn.contrib_conv2d_NCHWc",
            self.in_block(data, data_block, in_block),
            call("layout_transform", weight, src_layout="OIHW", dst_layout=kernel_layout),
            strides=attrs.strides,
            padding=attrs.padding,
            dilation=attrs.dilation,
            groups=groups,
            channels=out_channels,
            kernel_size=(kh, kw),
            data_layout=packed(in_block),
            kernel_layout=kernel_layout,
            out_layout=packed(out_block),
            out_dtype=attrs.out_dtype,
            span=node.span,
        )
        return conv, out_block

    def pool(self, node, args):
        (data, block), *_ = args
        if node.attrs.layout != _PRIMAL or (node.attrs.get("out_layout") or _PRIMAL) != _PRIMAL:
            return self.unpacked_call(node, args)
        attrs = node.attrs.with_changes(layout=packed(block), out_layout="")
        return E.Call(node.op, [data], attrs, node.type_args, span=node.span), block

    def broadcast(self, node, args):
        """An elementwise / broadcast operator applied in the packed layout of its packed operand(s),
        or None when an operand cannot follow (then the caller computes it in NCHW)."""
        opdef = lookup(op_name(node) or "")
        if opdef is None or opdef.pattern > OpPattern.BROADCAST:
            return None
        if opdef.attr_names and opdef.name not in _AGNOSTIC_WITH_ATTRS:
            return None
        out_shape = static_shape(node)
        if out_shape is None or len(out_shape) != 4:
            return None
        block = next(block for _, block in args if block is not None)
        operands = []
        for original, (new, arg_block) in zip(node.args, args):
            if arg_block is not None:
                operands.append(self.in_block(new, arg_block, block))
                continue
            operand = self.follow(new, static_shape(original), out_shape[1], block)
            if operand is None:
                return None
            operands.append(operand)
        return E.Call(node.op, operands, node.attrs, node.type_args, span=node.span), block

    def follow(self, new, shape, channels: int, block: int):
        """A plain operand broadcast against a packed NCHW value, re-laid out to broadcast against NCHW{block}c."""
        if shape is None:
            return None
        if all(d == 1 for d in shape):  # a scalar broadcasts in any layout
            return new
        axes = _PRIMAL[4 - len(shape) :] if len(shape) <= 4 else None
        if axes is None or "C" not in axes or shape[axes.index("C")] != channels or channels % block:
            return None  # varies along H / W only, or along an unknown axis: not in this layout
        return call("layout_transform", new, src_layout=axes, dst_layout=f"{axes}{block}c")


def _children(node) -> list:
    kind = type(node)
    if kind is E.Call:
        return list(node.args)
    if kind is E.Tuple:
        return list(node.fields)
    if kind is E.TupleGetItem:
        return [node.tuple_value]
    return []


def alter_op_layout(func, mod=None, ctx=None, lanes: int | None = None):
    """`func` with its NCHW convolutions in packed layouts (see the module docstring)."""
    if not _is_dataflow(func.body):
        return func
    rewriter = _LayoutRewriter(lanes or host_float_lanes())
    body = rewriter.rewrite(func.body)
    if body is func.body:
        return func
    return E.Function(func.params, body, func.ret_type, func.type_params, func.attrs, span=func.span)


def AlterOpLayout(lanes: int | None = None):
    """TVM's AlterOpLayout pass (opt_level 3) for x86: conv2d -> contrib_conv2d_NCHWc with blocks
    of `lanes` channels (default: the host's float32 vector width)."""

    def run(func, mod, ctx):
        return alter_op_layout(func, mod, ctx, lanes)

    return FunctionPass(run, 3, "AlterOpLayout")
