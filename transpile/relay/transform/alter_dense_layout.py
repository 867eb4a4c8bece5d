"""AlterDenseLayout: `nn.dense(x, W)` with a constant W becomes `nn.contrib_dense_pack` on W packed
in column blocks (TVM's x86 `_alter_dense_layout`, part of its AlterOpLayout):

    nn.dense(x, W) [W: (N, K) constant]
      -> nn.contrib_dense_pack(x, layout_transform(W, "NC", "NC32n"), weight_layout="NC32n")

FoldConstant (after this pass) packs W at compile time, so the kernel streams each block's weights
contiguously instead of re-packing W on every call (what the dense schedule does for an (N, K) weight).

Block n: the columns the matmul schedule computes at once — two vectors (32 floats with AVX-512)
when they divide N, else one vector; N below a vector keeps all of it (one block). A dense of at
most 4 rows and fewer than 4 vectors of columns stays (its dot-product schedule is faster). Other widths,
weights that are not constants (a runtime parameter is re-packed inside the kernel, where the
packing stays local), and non-float32 denses stay as they are.
"""

from __future__ import annotations

import numpy as np

from .. import expr as E
from ..op.families.nn.dense_pack import packed_layout
from ..ty import TensorType
from .alter_op_layout import host_float_lanes
from .infra import FunctionPass
from .patterns import call, op_name, static_shape, type_of
from .rewriter import Rewriter

__all__ = ["AlterDenseLayout", "alter_dense_layout", "dense_block"]


# Up to this many rows the schedule computes a dense as dot products over rows of the unpacked
# weight (a GEMV); packed blocks only beat that when there are enough of them: about 4 vectors of
# columns give the independent accumulators that hide the multiply-add latency.
GEMV_MAX_ROWS = 4


def dense_block(units: int, lanes: int, rows: int | None = None) -> int | None:
    """Column block for a dense of `units` outputs: 2 vectors, 1 vector, or all units below a vector;
    None (keep the weight as it is) for other widths and for few `rows` with few columns."""
    if rows is not None and rows <= GEMV_MAX_ROWS and units < 4 * lanes:
        return None
    for block in (2 * lanes, lanes):
        if units % block == 0:
            return block
    return units if 4 <= units < lanes else None


class _DensePacker(Rewriter):
    def __init__(self, lanes: int):
        super().__init__()
        self.lanes = lanes

    def rewrite_call(self, original, new):
        if op_name(new) != "nn.dense" or type(new.args[1]) is not E.Constant:
            return new
        data_type, weight_shape = type_of(original.args[0]), static_shape(original.args[1])
        if (
            not isinstance(data_type, TensorType)
            or data_type.dtype != "float32"  # the schedule is written (and measured) for float32
            or new.args[1].data.dtype.name != "float32"
            or weight_shape is None
            or len(weight_shape) != 2
        ):
            return new
        data_shape = static_shape(original.args[0])
        rows = None if data_shape is None else int(np.prod(data_shape[:-1]))
        block = dense_block(weight_shape[0], self.lanes, rows)
        if block is None:
            return new
        layout = packed_layout(block)
        weight = call("layout_transform", new.args[1], src_layout="NC", dst_layout=layout)
        return call(
            "nn.contrib_dense_pack",
            new.args[0],
            weight,
            units=None,
            out_dtype=new.attrs.out_dtype,
            weight_layout=layout,
            span=new.span,
        )


def alter_dense_layout(func, mod=None, ctx=None, lanes: int | None = None):
    """`func` with its constant-weight denses on packed weights (see the module docstring)."""
    return _DensePacker(lanes or host_float_lanes()).visit(func)


def AlterDenseLayout(lanes: int | None = None):
    """TVM's x86 dense alter-layout (opt_level 3): dense on a constant weight -> contrib_dense_pack
    with blocks of 2 or 1 vectors of `lanes` floats (default: the host's float32 vector width)."""

    def run(func, mod, ctx):
        return alter_dense_layout(func, mod, ctx, lanes)

    return FunctionPass(run, 3, "AlterDenseLayout")
