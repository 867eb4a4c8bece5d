"""TE lowerings of the convolutions through topi (conv2d, conv1d, conv2d_transpose, contrib_conv2d_NCHWc).

Layouts topi computes directly (NCHW/OIHW, NHWC/HWIO, NHWC/HWOI depthwise) go straight to it; any
other permutation is transposed into one of them first (an injective stage a schedule can inline),
and the result is transposed to out_layout. float16 accumulates in float32 like the numpy reference.
"""

from __future__ import annotations

from ..te_support import require_equal
from ._common import padding_1d, padding_2d, spatial_pair
from .te_common import accumulate_dtype, blocked_axes, cast, dims, ints, permute


def require_in_channels(data_channels, weight_channels, groups: int, op_name: str) -> None:
    """The type relation's promise for `?` dims: the data has groups × the weight's input channels."""
    require_equal((data_channels, weight_channels * groups), f"{op_name}: the data's channels do not match the weight")


def conv2d_any_layout(
    data, weight, data_layout, kernel_layout, out_layout, strides, padding, dilation, groups, out_dtype
):
    """Relay conv2d semantics (including depthwise with a channel multiplier) for permuted layouts."""
    from tvm import topi

    acc = accumulate_dtype(out_dtype)
    channels = int(data.shape[data_layout.index("C")])
    weight_o = int(weight.shape[kernel_layout.index("O")])
    nhwc = data_layout == "NHWC"
    common = dict(stride=strides, padding=padding, dilation=dilation, out_dtype=acc)
    if groups == 1:
        if nhwc:
            out = topi.nn.conv2d_nhwc(data, permute(weight, kernel_layout, "HWIO"), **common)
        else:
            out = topi.nn.conv2d_nchw(
                permute(data, data_layout, "NCHW"), permute(weight, kernel_layout, "OIHW"), **common
            )
    elif groups == channels == weight_o:
        # Depthwise: the OIHW weight reads as (in channel, multiplier, kh, kw), output channel c * m + j.
        if nhwc:
            weight = permute(weight, kernel_layout, "HWOI")
            out = topi.nn.depthwise_conv2d_nhwc(data, weight, kernel_layout="HWOI", **common)
        else:
            weight = permute(weight, kernel_layout, "OIHW")
            out = topi.nn.depthwise_conv2d_nchw(permute(data, data_layout, "NCHW"), weight, **common)
    elif nhwc:
        out = topi.nn.group_conv2d_nhwc(data, permute(weight, kernel_layout, "HWIO"), groups=groups, **common)
    else:
        data = permute(data, data_layout, "NCHW")
        out = topi.nn.group_conv2d_nchw(data, permute(weight, kernel_layout, "OIHW"), groups=groups, **common)
    return cast(permute(out, "NHWC" if nhwc else "NCHW", out_layout), out_dtype)


def conv2d_te(inputs, attrs, out_type):
    from .....kernels.schedules.conv_int8 import conv2d_nchw_int8_te, takes_int8_dot

    data, weight = inputs
    layouts = (attrs.data_layout, attrs.kernel_layout, attrs.out_layout)
    if takes_int8_dot(data.dtype, weight.dtype, out_type.dtype, attrs.groups, layouts) and all(
        isinstance(d, int) for d in dims(data) + dims(weight)
    ):
        return conv2d_nchw_int8_te(  # packed for the CPU's u8 x s8 dot-product instructions
            data,
            weight,
            ints(spatial_pair(attrs.strides, "nn.conv2d", "strides")),
            ints(padding_2d(attrs.padding, "nn.conv2d")),
            ints(spatial_pair(attrs.dilation, "nn.conv2d", "dilation")),
        )
    return conv2d_any_layout(
        data,
        weight,
        attrs.data_layout,
        attrs.kernel_layout,
        attrs.out_layout or attrs.data_layout,
        ints(spatial_pair(attrs.strides, "nn.conv2d", "strides")),
        ints(padding_2d(attrs.padding, "nn.conv2d")),
        ints(spatial_pair(attrs.dilation, "nn.conv2d", "dilation")),
        attrs.groups,
        out_type.dtype,
    )


def conv1d_te(inputs, attrs, out_type):
    from tvm import topi

    acc = accumulate_dtype(out_type.dtype)
    data = permute(inputs[0], attrs.data_layout, "NCW")
    weight = permute(inputs[1], attrs.kernel_layout, "OIW")
    require_in_channels(data.shape[1], weight.shape[1], attrs.groups, "nn.conv1d")
    common = dict(
        strides=ints(spatial_pair(attrs.strides, "nn.conv1d", "strides", 1)),
        padding=ints(padding_1d(attrs.padding, "nn.conv1d")),
        dilation=ints(spatial_pair(attrs.dilation, "nn.conv1d", "dilation", 1)),
        out_dtype=acc,
    )
    if attrs.groups == 1:
        out = topi.nn.conv1d_ncw(data, weight, **common)
    else:
        out = topi.nn.group_conv1d_ncw(data, weight, groups=attrs.groups, **common)
    return cast(permute(out, "NCW", attrs.out_layout or attrs.data_layout), out_type.dtype)


def conv2d_transpose_te(inputs, attrs, out_type):
    from tvm import topi

    acc = accumulate_dtype(out_type.dtype)
    data = permute(inputs[0], attrs.data_layout, "NCHW")
    weight = permute(inputs[1], attrs.kernel_layout, "IOHW")
    require_in_channels(data.shape[1], weight.shape[0], 1, "nn.conv2d_transpose")
    dilation = ints(spatial_pair(attrs.dilation, "nn.conv2d_transpose", "dilation"))
    if dilation != [1, 1]:
        # topi has no dilated transposed conv: spreading the kernel taps with zeros is the same thing.
        weight = topi.nn.dilate(weight, [1, 1, *dilation])
    strides = ints(spatial_pair(attrs.strides, "nn.conv2d_transpose", "strides"))
    padding = ints(padding_2d(attrs.padding, "nn.conv2d_transpose"))
    output_padding = ints(spatial_pair(attrs.output_padding, "nn.conv2d_transpose", "output_padding"))
    if attrs.groups == 1:
        out = topi.nn.conv2d_transpose_nchw(data, weight, strides, padding, acc, output_padding)
    else:
        out = topi.nn.group_conv2d_transpose_nchw(data, weight, strides, padding, acc, output_padding, attrs.groups)
    return cast(permute(out, "NCHW", attrs.out_layout or attrs.data_layout), out_type.dtype)


def _block_factors(layout: str) -> tuple[list[str], dict]:
    axes = blocked_axes(layout)
    factors = {axis: 1 for axis in axes if axis.isupper()}
    for axis in axes:
        if axis[-1].islower():
            factors[axis[-1].upper()] = int(axis[:-1])
    return axes, factors


def unpack_te(tensor, layout: str, primal: str, name: str):
    """A blocked tensor (e.g. NCHW4c) as the plain `primal` layout (NCHW)."""
    from tvm import te

    axes, factors = _block_factors(layout)
    shape = [dims(tensor)[axes.index(a)] * factors[a] for a in primal]

    def element(*index):
        by_axis = dict(zip(primal, index))
        blocked = []
        for axis in axes:
            if axis[-1].islower():
                primal_axis = axis[-1].upper()
                blocked.append(by_axis[primal_axis] % factors[primal_axis])
            else:
                blocked.append(by_axis[axis] // factors[axis] if factors[axis] > 1 else by_axis[axis])
        return tensor(*blocked)

    return te.compute(shape, element, name=name, tag="injective")


def pack_te(tensor, primal: str, layout: str, name: str):
    """A plain tensor (NCHW) in a blocked layout (NCHW4c)."""
    from tvm import te

    axes, factors = _block_factors(layout)
    shape = []
    for axis in axes:
        if axis[-1].islower():
            shape.append(factors[axis[-1].upper()])
        else:
            shape.append(dims(tensor)[primal.index(axis)] // factors[axis])

    def element(*index):
        by_axis = dict(zip(axes, index))
        primal_index = []
        for axis in primal:
            if factors[axis] > 1:
                primal_index.append(by_axis[axis] * factors[axis] + by_axis[f"{factors[axis]}{axis.lower()}"])
            else:
                primal_index.append(by_axis[axis])
        return tensor(*primal_index)

    return te.compute(shape, element, name=name, tag="injective")


def conv2d_nchwc_te(inputs, attrs, out_type):
    """The direct blocked compute (conv_packed_te) when the layouts allow it; otherwise unblock data
    and weight, convolve in NCHW and block the result (correct, but no packed schedule applies)."""
    from .conv_packed_te import direct_nchwc

    direct = direct_nchwc(inputs, attrs, out_type)
    if direct is not None:
        return direct
    data = unpack_te(inputs[0], attrs.data_layout, "NCHW", "data_unpacked")
    weight = unpack_te(inputs[1], attrs.kernel_layout, "OIHW", "weight_unpacked")
    out = conv2d_any_layout(
        data,
        weight,
        "NCHW",
        "OIHW",
        "NCHW",
        ints(spatial_pair(attrs.strides, "", "strides")),
        ints(padding_2d(attrs.padding, "")),
        ints(spatial_pair(attrs.dilation, "", "dilation")),
        attrs.groups,
        out_type.dtype,
    )
    out_layout = attrs.out_layout or attrs.data_layout
    if out_layout == "NCHW":
        return out
    return pack_te(out, "NCHW", out_layout, "conv2d_NCHWc_packed")
