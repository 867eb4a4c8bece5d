"""nn.conv3d: 3-D convolution over NCDHW data and OIDHW weights (TVM's Conv3DRel, the relation of conv.py)."""

from __future__ import annotations

import numpy as np

from ...registry import AttrField, OpPattern, register
from ._common import NNOpDef, compute_dtype, normalizer, padding_nd, spatial_pair, to_dtype, to_int, to_ints, to_str
from .conv import conv_rel, conv_weight_inference
from .conv_kernels_nd import conv_nd
from .conv_nd_te import conv3d_te


def _conv3d_impl(args, attrs, out_type):
    data = np.transpose(args[0], [attrs.data_layout.index(a) for a in "NCDHW"])
    weight = np.transpose(args[1], [attrs.kernel_layout.index(a) for a in "OIDHW"])
    groups = attrs.groups
    if groups > 1 and groups == data.shape[1] == weight.shape[0] and weight.shape[1] != 1:
        # Depthwise with a channel multiplier (TVM's is_depthwise case): weight (C, m, kd, kh, kw),
        # output channel c * m + j reads input channel c.
        weight = weight.reshape(-1, 1, *weight.shape[2:])
    out = conv_nd(
        data,
        weight,
        spatial_pair(attrs.strides, "nn.conv3d", "strides", 3),
        padding_nd(attrs.padding, 3, "nn.conv3d"),
        spatial_pair(attrs.dilation, "nn.conv3d", "dilation", 3),
        groups,
        compute_dtype(out_type.dtype),
    )
    out_layout = attrs.out_layout or attrs.data_layout
    return np.transpose(out, ["NCDHW".index(a) for a in out_layout]).astype(out_type.dtype)


register(
    NNOpDef(
        "nn.conv3d",
        2,
        conv_rel("nn.conv3d", "NCDHW", "OIDHW"),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _conv3d_impl,
        te_impl=conv3d_te,
        infer_args=conv_weight_inference("nn.conv3d", "NCDHW", "OIDHW"),
        attrs=(
            AttrField("strides", (1, 1, 1), to_ints),
            AttrField("padding", (0, 0, 0), to_ints, "1, 3 or 6 values (front, top, left, back, bottom, right)"),
            AttrField("dilation", (1, 1, 1), to_ints),
            AttrField("groups", 1, to_int),
            AttrField("channels", None, to_int, "number of output channels; None means from the weight"),
            AttrField("kernel_size", None, to_ints),
            AttrField("data_layout", "NCDHW", to_str),
            AttrField("kernel_layout", "OIDHW", to_str),
            AttrField("out_layout", "", to_str, "empty means data_layout"),
            AttrField("out_dtype", "", to_dtype, "empty means the data dtype"),
        ),
        extras={"builder_normalize": normalizer(triples=("strides", "dilation", "kernel_size"), pad6=("padding",))},
        description="3-D convolution (groups, dilation, any permutation of NCDHW / OIDHW layouts).",
    )
)
