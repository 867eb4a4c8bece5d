"""Transposed convolutions: one relation for 1, 2 and 3 spatial axes; nn.conv1d_transpose and nn.conv3d_transpose.

The relation is TVM's Conv{1,2,3}DTransposeRel (weight in I O[spatial] order: input channels,
output channels / groups, kernel). One deliberate difference: without channels/kernel_size the
output has weight.shape[1] * groups channels (TVM said weight.shape[1], wrong for groups > 1;
ONNX ConvTranspose and PyTorch agree with the product). nn.conv2d_transpose lives in conv.py.
"""

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
    padding_nd,
    shape_text,
    spatial_pair,
    to_dtype,
    to_int,
    to_ints,
    to_str,
    weight_inference,
)
from .conv_kernels_nd import conv_transpose_nd
from .conv_nd_te import conv_transpose_nd_te


def conv_transpose_weight_shape(in_channels, channels, groups, kernel) -> list:
    """The weight (I, O, spatial...) that channels and kernel_size imply (TVM's Conv2DTransposeRel)."""
    return [in_channels, divide_dim(channels, groups), *kernel]


def conv_transpose_weight_inference(op_name: str, data_primal: str, kernel_primal: str):
    """An unknown weight from the data, channels, groups and kernel_size, as TVM's Conv*DTransposeRel."""
    return weight_inference(op_name, data_primal, kernel_primal, conv_transpose_weight_shape)


def _output_padding(value, op_name: str, nd: int, minimum=None) -> tuple:
    """output_padding per spatial axis. TVM's 1-D relation and kernel read output_padding[0] only, so
    nn.conv1d_transpose took the 2-D form (0, 0) too: its first value is the one that counts."""
    values = tuple(value)
    if nd == 1 and len(values) > 1:
        values = values[:1]
    return spatial_pair(values, op_name, "output_padding", nd, minimum=minimum)


def _dilated(kernel, dilation):
    return AnyDim() if is_any(kernel) else 1 + (kernel - 1) * dilation


def conv_transpose_rel(op_name: str, data_primal: str, kernel_primal: str):
    """The relation of a transposed convolution over data `data_primal` (e.g. NCHW), weight `kernel_primal` (IOHW)."""
    spatial = data_primal[2:]
    nd, rank = len(spatial), len(data_primal)

    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        weight = expect_tensor(arg_types[1], op_name, "weight")
        din = layout_positions(attrs.data_layout, data_primal, op_name, "data_layout")
        kin = layout_positions(attrs.kernel_layout, kernel_primal, op_name, "kernel_layout")
        out_layout = attrs.out_layout or attrs.data_layout
        layout_positions(out_layout, data_primal, op_name, "out_layout")
        if data.ndim != rank:
            raise RelationError(
                f"{op_name}: data must have rank {rank} for layout {attrs.data_layout}, got {fmt_type(data)}"
            )
        if weight.ndim != rank:
            raise RelationError(f"{op_name}: weight must have rank {rank}, got {fmt_type(weight)}")
        strides = spatial_pair(attrs.strides, op_name, "strides", nd, minimum=1)
        dilation = spatial_pair(attrs.dilation, op_name, "dilation", nd, minimum=1)
        output_padding = _output_padding(attrs.output_padding, op_name, nd, minimum=0)
        pads = padding_nd(attrs.padding, nd, op_name)
        groups = attrs.groups
        if groups < 1:
            raise RelationError(f"{op_name}: groups must be >= 1, got {groups}")
        dshape = [data.shape[din[a]] for a in data_primal]
        wshape = [weight.shape[kin[a]] for a in kernel_primal]
        if attrs.kernel_size is not None and attrs.channels is not None:
            kernel = spatial_pair(attrs.kernel_size, op_name, "kernel_size", nd, minimum=1)
            expected = conv_transpose_weight_shape(dshape[1], attrs.channels, groups, kernel)
            if not all(dim_eq(a, b) for a, b in zip(wshape, expected)):
                expected_text = shape_text(expected[kernel_primal.index(a)] for a in attrs.kernel_layout)
                raise RelationError(
                    f"{op_name}: weight {fmt_type(weight)} does not match channels={attrs.channels}, "
                    f"kernel_size={list(kernel)}, groups={groups} for data {fmt_type(data)}: "
                    f"expected shape {expected_text}"
                )
            channels = attrs.channels
        else:
            if attrs.kernel_size is not None:
                kernel = spatial_pair(attrs.kernel_size, op_name, "kernel_size", nd, minimum=1)
                if not all(dim_eq(k, w) for k, w in zip(kernel, wshape[2:])):
                    raise RelationError(
                        f"{op_name}: weight {fmt_type(weight)} is inconsistent with kernel_size={list(kernel)}"
                    )
            if attrs.channels is not None and not dim_eq(divide_dim(attrs.channels, groups), wshape[1]):
                raise RelationError(
                    f"{op_name}: weight {fmt_type(weight)} is inconsistent with channels={attrs.channels} and "
                    f"groups={groups} (channels // groups must equal the weight's output-channel dimension)"
                )
            if not dim_eq(dshape[1], wshape[0]):
                raise RelationError(
                    f"{op_name}: channel mismatch: data {fmt_type(data)} has {dshape[1]} input channels but weight "
                    f"{fmt_type(weight)} expects {wshape[0]}"
                )
            channels = AnyDim() if is_any(wshape[1]) else wshape[1] * groups
            kernel = tuple(wshape[2:])
        if not is_any(dshape[1]) and dshape[1] % groups != 0:
            raise RelationError(f"{op_name}: the input channels ({dshape[1]}) are not divisible by groups ({groups})")
        out = [dshape[0], channels]
        for i, axis in enumerate(spatial):
            size = dshape[2 + i]
            if is_any(size) or is_any(kernel[i]):
                out.append(AnyDim())
                continue
            extent = (
                strides[i] * (size - 1) + _dilated(kernel[i], dilation[i]) - pads[i] - pads[i + nd] + output_padding[i]
            )
            if extent <= 0:
                raise RelationError(f"{op_name}: the output {SPATIAL_NAMES[axis]} would be {extent}")
            out.append(extent)
        by_axis = dict(zip(data_primal, out))
        return TensorType([by_axis[a] for a in out_layout], attrs.out_dtype or data.dtype)

    return rel


def _conv_transpose_impl(op_name: str, data_primal: str, kernel_primal: str):
    nd = len(data_primal) - 2

    def impl(args, attrs, out_type):
        data = np.transpose(args[0], [attrs.data_layout.index(a) for a in data_primal])
        weight = np.transpose(args[1], [attrs.kernel_layout.index(a) for a in kernel_primal])
        out = conv_transpose_nd(
            data,
            weight,
            spatial_pair(attrs.strides, op_name, "strides", nd),
            padding_nd(attrs.padding, nd, op_name),
            spatial_pair(attrs.dilation, op_name, "dilation", nd),
            _output_padding(attrs.output_padding, op_name, nd),
            attrs.groups,
            compute_dtype(out_type.dtype),
        )
        out_layout = attrs.out_layout or attrs.data_layout
        return np.transpose(out, [data_primal.index(a) for a in out_layout]).astype(out_type.dtype)

    return impl


def conv_transpose_attrs(nd: int, data_layout: str, kernel_layout: str) -> tuple:
    """The C++ attribute order of Conv{1,2,3}DTransposeAttrs."""
    one, zero = (1,) * nd, (0,) * nd
    return (
        AttrField("channels", None, to_int),
        AttrField("kernel_size", None, to_ints),
        AttrField("strides", one, to_ints),
        AttrField("output_padding", zero, to_ints),
        AttrField("padding", zero, to_ints, f"1, {nd} or {2 * nd} values (before..., after...)"),
        AttrField("dilation", one, to_ints),
        AttrField("groups", 1, to_int),
        AttrField("data_layout", data_layout, to_str),
        AttrField("kernel_layout", kernel_layout, to_str),
        AttrField("out_layout", "", to_str),
        AttrField("out_dtype", "", to_dtype),
    )


# relay.nn.conv{1,2,3}d_transpose(data, weight, strides, padding, dilation, groups, channels,
# kernel_size, data_layout, kernel_layout, out_layout, output_padding, out_dtype)
TRANSPOSE_BUILDER_PARAMS = (
    "strides",
    "padding",
    "dilation",
    "groups",
    "channels",
    "kernel_size",
    "data_layout",
    "kernel_layout",
    "out_layout",
    "output_padding",
    "out_dtype",
)

for _name, _data, _kernel, _normalize in (
    ("nn.conv1d_transpose", "NCW", "IOW", None),
    (
        "nn.conv3d_transpose",
        "NCDHW",
        "IODHW",
        normalizer(triples=("strides", "dilation", "kernel_size"), pad6=("padding",)),
    ),
):
    register(
        NNOpDef(
            _name,
            2,
            conv_transpose_rel(_name, _data, _kernel),
            OpPattern.OUT_ELEMWISE_FUSABLE,
            _conv_transpose_impl(_name, _data, _kernel),
            te_impl=conv_transpose_nd_te(_name, _data, _kernel),
            infer_args=conv_transpose_weight_inference(_name, _data, _kernel),
            attrs=conv_transpose_attrs(len(_data) - 2, _data, _kernel),
            extras={"builder_params": TRANSPOSE_BUILDER_PARAMS, "builder_normalize": _normalize},
            description=f"Transposed {len(_data) - 2}-D convolution (the convolution's gradient); weight {_kernel}.",
        )
    )
