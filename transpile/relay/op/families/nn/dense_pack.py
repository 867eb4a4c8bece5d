"""nn.contrib_dense_pack: dense with the weight pre-packed in column blocks, layout NC{n}n = (N/n, K, n).

TVM's x86 AlterOpLayout turned `nn.dense(x, W)` into `nn.contrib_dense_pack(x, layout_transform(W,
"NC", "NC16n"))` so that the n output columns a kernel computes at once read one contiguous run of
weights per step of k; with W a constant the packing happens once, at compile time (FoldConstant).
"""

from __future__ import annotations

import re

import numpy as np

from ....ty import TensorType
from ...common import dim_eq, expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..te_support import require_equal
from ._common import NNOpDef, is_any, to_dtype, to_int, to_str
from .dense import _matmul_np
from .te_common import accumulate_dtype, cast

__all__ = ["packed_layout", "block_of_layout", "pack_dense_weight", "unpack_dense_weight"]

_LAYOUT = re.compile(r"^NC(\d+)n$")


def packed_layout(block: int) -> str:
    """The weight layout of column blocks of `block`: NC16n."""
    return f"NC{block}n"


def block_of_layout(layout: str, op_name: str = "nn.contrib_dense_pack") -> int:
    """The column block of a packed weight layout (NC16n -> 16)."""
    match = _LAYOUT.match(layout or "")
    if not match or int(match.group(1)) < 1:
        raise RelationError(f"{op_name}: weight_layout must be NC<n>n (e.g. NC16n), got {layout!r}")
    return int(match.group(1))


def pack_dense_weight(weight: np.ndarray, block: int) -> np.ndarray:
    """(N, K) -> (N/block, K, block), as layout_transform(weight, "NC", "NC{block}n")."""
    units, k = weight.shape
    return np.ascontiguousarray(weight.reshape(units // block, block, k).transpose(0, 2, 1))


def unpack_dense_weight(packed: np.ndarray) -> np.ndarray:
    """(N/n, K, n) -> (N, K)."""
    blocks, k, block = packed.shape
    return packed.transpose(0, 2, 1).reshape(blocks * block, k)


def _dense_pack_rel(arg_types, attrs):
    """TVM's DensePackRel: data (..., K), weight (N/n, K, n) -> (..., N)."""
    op_name = "nn.contrib_dense_pack"
    data = expect_tensor(arg_types[0], op_name, "data")
    weight = expect_tensor(arg_types[1], op_name, "weight")
    block = block_of_layout(attrs.weight_layout)
    if data.ndim == 0:
        raise RelationError(f"{op_name}: data must have rank >= 1, got {fmt_type(data)}")
    if weight.ndim != 3 or not dim_eq(weight.shape[2], block):
        raise RelationError(f"{op_name}: weight {fmt_type(weight)} is not in layout {attrs.weight_layout} (N/{block}, K, {block})")
    if not dim_eq(data.shape[-1], weight.shape[1]):
        raise RelationError(
            f"{op_name}: data {fmt_type(data)} and weight {fmt_type(weight)} disagree on the reduction dimension "
            f"({data.shape[-1]} vs {weight.shape[1]})"
        )
    units = weight.shape[0] if is_any(weight.shape[0]) else weight.shape[0] * block
    return TensorType((*data.shape[:-1], units), attrs.out_dtype or data.dtype)


def _dense_pack_impl(args, attrs, out_type):
    return _matmul_np(args[0], unpack_dense_weight(args[1]), False, True, out_type.dtype)


def _dense_pack_te(inputs, attrs, out_type):
    """out[..., j] = sum_k data[..., k] * weight[j // n, k, j % n] (block "T_dense_pack")."""
    from tvm import te

    data, weight = inputs
    block = block_of_layout(attrs.weight_layout)
    require_equal((data.shape[-1], weight.shape[1]), "nn.contrib_dense_pack: the operands' reduction dimensions differ")
    acc = accumulate_dtype(out_type.dtype)
    k = te.reduce_axis((0, data.shape[-1]), name="k")

    def element(*index):
        *lead, j = index
        return te.sum(data[(*lead, k)].astype(acc) * weight[j // block, k, j % block].astype(acc), axis=k)

    shape = [*data.shape[:-1], weight.shape[0] * block]
    return cast(te.compute(shape, element, name="T_dense_pack", tag="dense_pack"), out_type.dtype)


register(
    NNOpDef(
        "nn.contrib_dense_pack",
        2,
        _dense_pack_rel,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _dense_pack_impl,
        te_impl=_dense_pack_te,
        attrs=(
            # As TVM's DensePackAttrs: units is not used by the type relation (the weight decides).
            AttrField("units", None, to_int, "number of output units (informational); the weight decides"),
            AttrField("out_dtype", "", to_dtype, "output dtype; empty means the input dtype"),
            AttrField("weight_layout", "NC", to_str, "layout of the packed weight: NC<n>n = (N/n, K, n)"),
        ),
        description="data @ W.T with W pre-packed in column blocks (weight layout NC<n>n).",
    )
)
