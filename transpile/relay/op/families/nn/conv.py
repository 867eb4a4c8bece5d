"""Convolutions: nn.conv2d, nn.conv2d_transpose, nn.conv1d (type relations as TVM's convolution.h; 3-D in conv3d.py)."""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim, TensorType
from ...common import dim_eq, expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ._common import (
    SPATIAL_NAMES,
    NNOpDef,
    compute_dtype,
    divide_dim,
    is_any,
    layout_positions,
    normalizer,
    padding_1d,
    padding_2d,
    padding_nd,
    shape_text,
    spatial_pair,
    to_dtype,
    to_int,
    to_ints,
    to_str,
    weight_inference,
)
from .conv_kernels import conv2d_nchw, conv2d_transpose_nchw
from .conv_te import conv1d_te, conv2d_te, conv2d_transpose_te
from .conv_transpose import (
    TRANSPOSE_BUILDER_PARAMS,
    conv_transpose_attrs,
    conv_transpose_rel,
    conv_transpose_weight_inference,
)


def _conv_attrs(dims: int, data_layout: str, kernel_layout: str) -> tuple:
    one, zero = (1,) * dims, (0,) * dims
    return (
        AttrField("strides", one, to_ints),
        AttrField("padding", zero if dims == 2 else (0, 0), to_ints, "1, 2 or 4 values (top, left, bottom, right)"),
        AttrField("dilation", one, to_ints),
        AttrField("groups", 1, to_int),
        AttrField("channels", None, to_int, "number of output channels; None means from the weight"),
        AttrField("kernel_size", None, to_ints),
        AttrField("data_layout", data_layout, to_str),
        AttrField("kernel_layout", kernel_layout, to_str),
        AttrField("out_layout", "", to_str, "empty means data_layout"),
        AttrField("out_dtype", "", to_dtype, "empty means the data dtype"),
    )


def _spatial_out(op_name, what, size, pad, dilated_kernel, stride):
    if is_any(size) or is_any(dilated_kernel):
        return AnyDim()
    out = (size + pad - dilated_kernel) // stride + 1
    if out <= 0:
        raise RelationError(
            f"{op_name}: the output {what} would be {out}: input {what} {size} with padding {pad} is smaller than "
            f"the dilated kernel ({dilated_kernel})"
        )
    return out


def _dilated(kernel, dilation):
    return AnyDim() if is_any(kernel) else 1 + (kernel - 1) * dilation


def conv_weight_shape(in_channels, channels, groups, kernel) -> list:
    """The weight (O, I, spatial...) that channels and kernel_size imply (TVM's Conv2DRel, not depthwise)."""
    return [channels, divide_dim(in_channels, groups), *kernel]


def conv_weight_inference(op_name: str, data_primal: str, kernel_primal: str):
    """An unknown weight from the data, channels, groups and kernel_size, as TVM's Conv*DRel assigned it."""
    return weight_inference(op_name, data_primal, kernel_primal, conv_weight_shape)


def conv_rel(op_name: str, data_primal: str, kernel_primal: str):
    """TVM's Conv2DRel (Conv1DRel, Conv3DRel): one relation for any number of spatial dimensions."""
    spatial = data_primal[2:]

    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        weight = expect_tensor(arg_types[1], op_name, "weight")
        din = layout_positions(attrs.data_layout, data_primal, op_name, "data_layout")
        kin = layout_positions(attrs.kernel_layout, kernel_primal, op_name, "kernel_layout")
        out_layout = attrs.out_layout or attrs.data_layout
        layout_positions(out_layout, data_primal, op_name, "out_layout")
        rank = len(data_primal)
        if data.ndim != rank:
            raise RelationError(
                f"{op_name}: data must have rank {rank} for layout {attrs.data_layout}, got {fmt_type(data)}"
            )
        if weight.ndim != rank:
            raise RelationError(
                f"{op_name}: weight must have rank {rank} for kernel layout {attrs.kernel_layout}, got {fmt_type(weight)}"
            )
        nd = len(spatial)
        strides = spatial_pair(attrs.strides, op_name, "strides", nd, minimum=1)
        dilation = spatial_pair(attrs.dilation, op_name, "dilation", nd, minimum=1)
        pads = padding_nd(attrs.padding, nd, op_name)
        pad_sums = tuple(pads[i] + pads[i + nd] for i in range(nd))
        groups = attrs.groups
        if groups < 1:
            raise RelationError(f"{op_name}: groups must be >= 1, got {groups}")
        dshape = [data.shape[din[a]] for a in data_primal]
        wshape = [weight.shape[kin[a]] for a in kernel_primal]
        in_channels = dshape[1]
        depthwise = groups > 1 and dim_eq(in_channels, groups) and dim_eq(wshape[0], groups)
        if not is_any(in_channels) and in_channels % groups != 0:
            raise RelationError(
                f"{op_name}: the input channels ({in_channels}) of data {fmt_type(data)} are not divisible by groups ({groups})"
            )
        if attrs.kernel_size is not None and attrs.channels is not None:
            kernel = spatial_pair(attrs.kernel_size, op_name, "kernel_size", nd, minimum=1)
            channels = attrs.channels
            if depthwise:
                expected = [in_channels, divide_dim(channels, in_channels)] + list(kernel)
            else:
                expected = conv_weight_shape(in_channels, channels, groups, kernel)
            if not all(dim_eq(a, b) for a, b in zip(wshape, expected)):
                expected_text = shape_text(expected[kernel_primal.index(a)] for a in attrs.kernel_layout)
                raise RelationError(
                    f"{op_name}: weight {fmt_type(weight)} does not match channels={channels}, "
                    f"kernel_size={list(kernel)}, groups={groups} for data {fmt_type(data)}: expected shape "
                    f"{expected_text} in kernel layout {attrs.kernel_layout}"
                )
        else:
            if attrs.kernel_size is not None:
                kernel = spatial_pair(attrs.kernel_size, op_name, "kernel_size", nd, minimum=1)
                if not all(dim_eq(k, w) for k, w in zip(kernel, wshape[2:])):
                    raise RelationError(
                        f"{op_name}: weight {fmt_type(weight)} is inconsistent with kernel_size={list(kernel)}"
                    )
            if attrs.channels is not None and not dim_eq(attrs.channels, wshape[0]):
                raise RelationError(
                    f"{op_name}: weight {fmt_type(weight)} has {wshape[0]} output channels but channels={attrs.channels}"
                )
            if not is_any(in_channels) and not is_any(wshape[1]) and in_channels // groups != wshape[1]:
                raise RelationError(
                    f"{op_name}: channel mismatch: data {fmt_type(data)} has {in_channels} input channels, which "
                    f"divided by groups ({groups}) must equal the input channels ({wshape[1]}) of weight "
                    f"{fmt_type(weight)}"
                )
            channels = wshape[0]
            kernel = tuple(wshape[2:])
        if not is_any(channels) and channels % groups != 0 and not depthwise:
            raise RelationError(f"{op_name}: the output channels ({channels}) are not divisible by groups ({groups})")
        out = [dshape[0], channels]
        for i, axis in enumerate(spatial):
            out.append(
                _spatial_out(
                    op_name,
                    SPATIAL_NAMES[axis],
                    dshape[2 + i],
                    pad_sums[i],
                    _dilated(kernel[i], dilation[i]),
                    strides[i],
                )
            )
        by_axis = dict(zip(data_primal, out))
        return TensorType([by_axis[a] for a in out_layout], attrs.out_dtype or data.dtype)

    return rel


def _to_primal(array, layout, primal):
    return np.transpose(array, [layout.index(a) for a in primal])


def _from_primal(array, primal, layout):
    return np.transpose(array, [primal.index(a) for a in layout])


def _conv2d_impl(args, attrs, out_type):
    data = _to_primal(args[0], attrs.data_layout, "NCHW")
    weight = _to_primal(args[1], attrs.kernel_layout, "OIHW")
    groups = attrs.groups
    if groups > 1 and groups == data.shape[1] == weight.shape[0] and weight.shape[1] != 1:
        # Depthwise with a channel multiplier (TVM's is_depthwise case): weight is
        # (C, multiplier, kh, kw) and output channel c * multiplier + m reads input channel c.
        weight = weight.reshape(-1, 1, *weight.shape[2:])
    out = conv2d_nchw(
        data,
        weight,
        spatial_pair(attrs.strides, "nn.conv2d", "strides"),
        padding_2d(attrs.padding, "nn.conv2d"),
        spatial_pair(attrs.dilation, "nn.conv2d", "dilation"),
        groups,
        compute_dtype(out_type.dtype),
    )
    return _from_primal(out, "NCHW", attrs.out_layout or attrs.data_layout).astype(out_type.dtype)


def _conv1d_impl(args, attrs, out_type):
    data = _to_primal(args[0], attrs.data_layout, "NCW")[:, :, None, :]
    weight = _to_primal(args[1], attrs.kernel_layout, "OIW")[:, :, None, :]
    left, right = padding_1d(attrs.padding, "nn.conv1d")
    out = conv2d_nchw(
        data,
        weight,
        (1, spatial_pair(attrs.strides, "nn.conv1d", "strides", 1)[0]),
        (0, left, 0, right),
        (1, spatial_pair(attrs.dilation, "nn.conv1d", "dilation", 1)[0]),
        attrs.groups,
        compute_dtype(out_type.dtype),
    )[:, :, 0, :]
    return _from_primal(out, "NCW", attrs.out_layout or attrs.data_layout).astype(out_type.dtype)


def _conv2d_transpose_impl(args, attrs, out_type):
    data = _to_primal(args[0], attrs.data_layout, "NCHW")
    weight = _to_primal(args[1], attrs.kernel_layout, "IOHW")
    out = conv2d_transpose_nchw(
        data,
        weight,
        spatial_pair(attrs.strides, "nn.conv2d_transpose", "strides"),
        padding_2d(attrs.padding, "nn.conv2d_transpose"),
        spatial_pair(attrs.dilation, "nn.conv2d_transpose", "dilation"),
        spatial_pair(attrs.output_padding, "nn.conv2d_transpose", "output_padding"),
        attrs.groups,
        compute_dtype(out_type.dtype),
    )
    return _from_primal(out, "NCHW", attrs.out_layout or attrs.data_layout).astype(out_type.dtype)


def _normalize_conv1d(given: dict) -> dict:
    # relay.nn.conv1d widened an int padding to (left, right), like get_pad_tuple1d.
    if given.get("padding") is not None:
        values = to_ints(given["padding"])
        given["padding"] = values * 2 if len(values) == 1 else values
    return given


register(
    NNOpDef(
        "nn.conv2d",
        2,
        conv_rel("nn.conv2d", "NCHW", "OIHW"),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _conv2d_impl,
        te_impl=conv2d_te,
        infer_args=conv_weight_inference("nn.conv2d", "NCHW", "OIHW"),
        attrs=_conv_attrs(2, "NCHW", "OIHW"),
        extras={"builder_normalize": normalizer(pairs=("strides", "dilation", "kernel_size"), pad4=("padding",))},
        description="2-D convolution (groups, dilation, any permutation of NCHW / OIHW layouts).",
    )
)
register(
    NNOpDef(
        "nn.conv1d",
        2,
        conv_rel("nn.conv1d", "NCW", "OIW"),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _conv1d_impl,
        te_impl=conv1d_te,
        infer_args=conv_weight_inference("nn.conv1d", "NCW", "OIW"),
        attrs=_conv_attrs(1, "NCW", "OIW"),
        extras={"builder_normalize": _normalize_conv1d},
        description="1-D convolution.",
    )
)


register(
    NNOpDef(
        "nn.conv2d_transpose",
        2,
        conv_transpose_rel("nn.conv2d_transpose", "NCHW", "IOHW"),
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _conv2d_transpose_impl,
        te_impl=conv2d_transpose_te,
        infer_args=conv_transpose_weight_inference("nn.conv2d_transpose", "NCHW", "IOHW"),
        attrs=conv_transpose_attrs(2, "NCHW", "IOHW"),
        extras={
            "builder_params": TRANSPOSE_BUILDER_PARAMS,
            "builder_normalize": normalizer(
                pairs=("strides", "dilation", "kernel_size", "output_padding"), pad4=("padding",)
            ),
        },
        description="Transposed 2-D convolution (gradient of conv2d); weight layout IOHW.",
    )
)
