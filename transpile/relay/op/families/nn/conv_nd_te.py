"""TE lowerings of nn.conv3d (topi) and of the 1-D / 3-D transposed convolutions (a direct gather compute).

The transposed convolution reads, for every output position and kernel tap, the one input position
that scatters there (if any): no dilated copy of the input, any padding (even larger than the
kernel) and any output_padding, groups and dilation in one stage. Layouts other than the primal
one are transposed in and out (injective stages a schedule inlines).
"""

from __future__ import annotations

from ._common import padding_nd, spatial_pair
from .conv_te import require_in_channels
from .te_common import accumulate_dtype, cast, dims, ints, output_shape, permute


def conv3d_te(inputs, attrs, out_type):
    from tvm import topi

    op_name = "nn.conv3d"
    data = permute(inputs[0], attrs.data_layout, "NCDHW")
    weight = permute(inputs[1], attrs.kernel_layout, "OIDHW")
    groups = attrs.groups
    require_in_channels(data.shape[1], weight.shape[1], groups, op_name)
    wshape = dims(weight)
    if groups > 1 and groups == dims(data)[1] == wshape[0] and wshape[1] != 1:
        # Depthwise with a channel multiplier (C, m, ...): the grouped form is (C * m, 1, ...).
        weight = topi.reshape(weight, [wshape[0] * wshape[1], 1, *wshape[2:]])
    out = topi.nn.conv3d_ncdhw(
        data,
        weight,
        ints(spatial_pair(attrs.strides, op_name, "strides", 3)),
        ints(padding_nd(attrs.padding, 3, op_name)),
        ints(spatial_pair(attrs.dilation, op_name, "dilation", 3)),
        groups,
        out_dtype=accumulate_dtype(out_type.dtype),
    )
    return cast(permute(out, "NCDHW", attrs.out_layout or attrs.data_layout), out_type.dtype)


def conv_transpose_nd_te(op_name: str, data_primal: str, kernel_primal: str):
    nd = len(data_primal) - 2

    def te_impl(inputs, attrs, out_type):
        from tvm import te, tirx

        data = permute(inputs[0], attrs.data_layout, data_primal)
        weight = permute(inputs[1], attrs.kernel_layout, kernel_primal)
        require_in_channels(data.shape[1], weight.shape[0], 1, op_name)
        strides = ints(spatial_pair(attrs.strides, op_name, "strides", nd))
        dilation = ints(spatial_pair(attrs.dilation, op_name, "dilation", nd))
        before = ints(padding_nd(attrs.padding, nd, op_name))[:nd]
        out_layout = attrs.out_layout or attrs.data_layout
        batch, channels, *sizes = dims(data)
        shape = output_shape(out_type, {out_layout.index("N"): batch}, op_name)
        shape = [shape[out_layout.index(a)] for a in data_primal]
        _, per_group_out, *kernel = dims(weight)
        per_group_in = channels // attrs.groups
        acc = accumulate_dtype(out_type.dtype)

        def element(n, o, *y):
            ic = te.reduce_axis((0, per_group_in), name="ic")
            taps = [te.reduce_axis((0, k), name=f"k{i}") for i, k in enumerate(kernel)]
            group = o // per_group_out
            sources, conditions = [], []
            for i in range(nd):
                # Output y receives input x when y + pad = x * stride + tap * dilation.
                shifted = y[i] + before[i] - taps[i] * dilation[i]
                source = tirx.floordiv(shifted, strides[i])
                conditions += [source >= 0, source < sizes[i]]
                if strides[i] > 1:
                    conditions.append(tirx.floormod(shifted, strides[i]) == 0)
                sources.append(source)
            channel = group * per_group_in + ic
            product = data(n, channel, *sources).astype(acc) * weight(channel, o % per_group_out, *taps).astype(acc)
            zero = tirx.const(0, acc)
            return te.sum(tirx.if_then_else(tirx.all(*conditions), product, zero), axis=[ic, *taps])

        out = te.compute(shape, element, name=f"T_{op_name[3:]}", tag=op_name[3:])
        return cast(permute(out, data_primal, out_layout), out_type.dtype)

    return te_impl
