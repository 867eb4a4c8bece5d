"""Converters of ATen convolution, matrix products, normalization and dropout."""

from __future__ import annotations

from ....op.registry import lookup
from ..converters import converter
from .support import cast, operand, scalar, static_dim, transposed_2d

# ---------------------------------------------------------------- convolution

_LAYOUTS = {1: ("NCW", "OIW", "IOW"), 2: ("NCHW", "OIHW", "IOHW"), 3: ("NCDHW", "OIDHW", "IODHW")}


def _per_axis(ctx, name: str, spatial: int) -> list[int]:
    values = ctx.ints(name, [])
    if len(values) == 1:
        values = values * spatial
    if len(values) != spatial:
        raise ctx.b.error(f"{name}={values} does not give one value per spatial axis ({spatial})")
    return values


def _registered(ctx, op_name: str) -> str:
    if lookup(op_name) is None:
        raise ctx.unsupported(f"{op_name} is not in the operator registry")
    return op_name


@converter("aten.convolution.default")
def convolution(ctx):
    b = ctx.b
    x, weight = ctx.tensor("input"), ctx.tensor("weight")
    spatial = b.ndim_of(weight) - 2
    if spatial not in _LAYOUTS or b.ndim_of(x) != spatial + 2:
        raise ctx.unsupported(f"a {b.ndim_of(x)}-d input with a {b.ndim_of(weight)}-d weight")
    data_layout, kernel_layout, transposed_layout = _LAYOUTS[spatial]
    weight_shape = b.static_shape(weight, "the convolution weight")
    groups = int(ctx.arg("groups", 1))
    padding = _per_axis(ctx, "padding", spatial)
    attrs = dict(
        strides=_per_axis(ctx, "stride", spatial),
        padding=padding + padding,
        dilation=_per_axis(ctx, "dilation", spatial),
        groups=groups,
        kernel_size=weight_shape[2:],
        data_layout=data_layout,
    )
    weight = cast(b, weight, b.dtype_of(x))
    if ctx.arg("transposed", False):
        op_name = _registered(ctx, f"nn.conv{spatial}d_transpose")
        y = b.call(
            op_name,
            x,
            weight,
            channels=weight_shape[1] * groups,
            kernel_layout=transposed_layout,
            output_padding=_per_axis(ctx, "output_padding", spatial),
            **attrs,
        )
    else:
        op_name = _registered(ctx, f"nn.conv{spatial}d")
        y = b.call(op_name, x, weight, channels=weight_shape[0], kernel_layout=kernel_layout, **attrs)
    if ctx.has_arg("bias"):
        y = b.call("nn.bias_add", y, cast(b, ctx.tensor("bias"), b.dtype_of(y)), axis=1)
    return y


# ---------------------------------------------------------------- matrix products


def _dense(ctx, lhs, rhs):
    """lhs @ rhs for 2-d operands, as nn.dense(lhs, rhs^T)."""
    b = ctx.b
    if b.ndim_of(lhs) != 2 or b.ndim_of(rhs) != 2:
        raise ctx.unsupported(f"mm of {b.ndim_of(lhs)}-d and {b.ndim_of(rhs)}-d tensors")
    units = b.shape_of(rhs)[1]
    return b.call("nn.dense", lhs, transposed_2d(b, rhs), units=None if not isinstance(units, int) else units)


def _scaled(ctx, value, factor):
    if factor == 1:
        return value
    return ctx.b.call("multiply", value, scalar(ctx.b, factor, ctx.b.dtype_of(value)))


@converter("aten.mm.default")
def mm(ctx):
    return _dense(ctx, ctx.tensor("self"), ctx.tensor("mat2"))


@converter("aten.addmm.default")
def addmm(ctx):
    product = _scaled(ctx, _dense(ctx, ctx.tensor("mat1"), ctx.tensor("mat2")), ctx.arg("alpha", 1))
    beta = ctx.arg("beta", 1)
    if beta == 0:
        return product
    return ctx.b.call("add", product, _scaled(ctx, operand(ctx.b, ctx.arg("self"), ctx.out_dtype), beta))


@converter("aten.bmm.default")
def bmm(ctx):
    return ctx.b.call("nn.batch_matmul", ctx.tensor("self"), ctx.tensor("mat2"), transpose_a=False, transpose_b=False)


@converter("aten.baddbmm.default")
def baddbmm(ctx):
    b = ctx.b
    product = b.call(
        "nn.batch_matmul", ctx.tensor("batch1"), ctx.tensor("batch2"), transpose_a=False, transpose_b=False
    )
    product = _scaled(ctx, product, ctx.arg("alpha", 1))
    beta = ctx.arg("beta", 1)
    if beta == 0:
        return product
    return b.call("add", product, _scaled(ctx, ctx.tensor("self"), beta))


@converter("aten.linear.default")
def linear(ctx):
    b = ctx.b
    x, weight = ctx.tensor("input"), ctx.tensor("weight")
    units = b.shape_of(weight)[0]
    y = b.call("nn.dense", x, weight, units=units if isinstance(units, int) else None)
    if ctx.has_arg("bias"):
        y = b.call("add", y, ctx.tensor("bias"))
    return y


@converter("aten.matmul.default")
def matmul(ctx):
    """torch.matmul: 1-d operands gain (then lose) a dimension; batch dimensions broadcast."""
    b = ctx.b
    lhs, rhs = ctx.tensor("self"), ctx.tensor("other")
    lhs_1d, rhs_1d = b.ndim_of(lhs) == 1, b.ndim_of(rhs) == 1
    if lhs_1d:
        lhs = b.call("expand_dims", lhs, axis=0)
    if rhs_1d:
        rhs = b.call("expand_dims", rhs, axis=1)
    if b.ndim_of(lhs) == 2 and b.ndim_of(rhs) == 2:
        y = _dense(ctx, lhs, rhs)
    else:
        lhs_shape, rhs_shape = b.static_shape(lhs, "a matmul operand"), b.static_shape(rhs, "a matmul operand")
        batch = _broadcast_shapes(ctx, lhs_shape[:-2], rhs_shape[:-2])
        lhs = b.call("broadcast_to", lhs, shape=batch + lhs_shape[-2:])
        rhs = b.call("broadcast_to", rhs, shape=batch + rhs_shape[-2:])
        count = 1
        for d in batch:
            count *= d
        y = b.call(
            "nn.batch_matmul",
            b.call("reshape", lhs, newshape=[count] + lhs_shape[-2:]),
            b.call("reshape", rhs, newshape=[count] + rhs_shape[-2:]),
            transpose_a=False,
            transpose_b=False,
        )
        y = b.call("reshape", y, newshape=batch + [lhs_shape[-2], rhs_shape[-1]])
    if lhs_1d:
        y = b.call("squeeze", y, axis=[b.ndim_of(y) - 2])
    if rhs_1d:
        y = b.call("squeeze", y, axis=[b.ndim_of(y) - 1])
    return y


def _broadcast_shapes(ctx, a, b):
    a, b = [1] * (len(b) - len(a)) + list(a), [1] * (len(a) - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise ctx.b.error(f"batch dimensions {a} and {b} do not broadcast")
        out.append(max(x, y))
    return out


# ---------------------------------------------------------------- normalization


def _affine_or_default(ctx, name, channels, fill, dtype):
    if ctx.has_arg(name):
        return cast(ctx.b, ctx.tensor(name), dtype)
    import numpy as np

    return ctx.b.const(np.full((channels,), fill, dtype=dtype))


def _unavailable_results(ctx, indices, what):
    for index in indices:
        if ctx.output_used(index):
            raise ctx.unsupported(f"result {index} ({what}) is used; only the normalized tensor is imported")


@converter(
    "aten._native_batch_norm_legit_no_training.default",
    "aten.native_batch_norm.default",
    "aten._native_batch_norm_legit.default",
)
def batch_norm(ctx):
    b = ctx.b
    if ctx.arg("training", False):
        raise ctx.unsupported("batch normalization in training mode (export the module in eval mode)")
    _unavailable_results(ctx, (1, 2), "the saved statistics")
    x = ctx.tensor("input")
    dtype = b.dtype_of(x)
    channels = static_dim(ctx, x, 1, "the channel dimension")
    y = b.call(
        "nn.batch_norm",
        x,
        _affine_or_default(ctx, "weight", channels, 1, dtype),
        _affine_or_default(ctx, "bias", channels, 0, dtype),
        cast(b, ctx.tensor("running_mean"), dtype),
        cast(b, ctx.tensor("running_var"), dtype),
        axis=1,
        epsilon=float(ctx.arg("eps")),
    )
    return [b.get(y, 0), None, None]


@converter("aten._native_batch_norm_legit.no_stats")
def batch_norm_batch_statistics(ctx):
    """Normalization by the batch's own statistics (instance norm exports as this)."""
    b = ctx.b
    _unavailable_results(ctx, (1, 2), "the saved statistics")
    x = ctx.tensor("input")
    dtype = b.dtype_of(x)
    channels = static_dim(ctx, x, 1, "the channel dimension")
    axes = [a for a in range(b.ndim_of(x)) if a != 1]
    mean = b.call("mean", x, axis=axes, keepdims=True)
    variance = b.call("variance", x, mean, axis=axes, keepdims=True)
    normalized = _normalize(b, x, mean, variance, float(ctx.arg("eps")))
    shape = [channels] + [1] * (b.ndim_of(x) - 2)
    weight = b.call("reshape", _affine_or_default(ctx, "weight", channels, 1, dtype), newshape=shape)
    bias = b.call("reshape", _affine_or_default(ctx, "bias", channels, 0, dtype), newshape=shape)
    return [b.call("add", b.call("multiply", normalized, weight), bias), None, None]


def _normalize(b, x, mean, variance, eps):
    dtype = b.dtype_of(x)
    return b.call(
        "multiply", b.call("subtract", x, mean), b.call("rsqrt", b.call("add", variance, scalar(b, eps, dtype)))
    )


@converter("aten.native_layer_norm.default")
def layer_norm(ctx):
    b = ctx.b
    x = ctx.tensor("input")
    dtype, ndim = b.dtype_of(x), b.ndim_of(x)
    normalized = ctx.ints("normalized_shape")
    axes = list(range(ndim - len(normalized), ndim))
    eps = float(ctx.arg("eps"))
    statistics_used = ctx.output_used(1) or ctx.output_used(2)
    if len(axes) == 1 and ctx.has_arg("weight") and ctx.has_arg("bias") and not statistics_used:
        y = b.call(
            "nn.layer_norm",
            x,
            cast(b, ctx.tensor("weight"), dtype),
            cast(b, ctx.tensor("bias"), dtype),
            axis=-1,
            epsilon=eps,
        )
        return [y, None, None]
    mean = b.call("mean", x, axis=axes, keepdims=True)
    variance = b.call("variance", x, mean, axis=axes, keepdims=True)
    y = _normalize(b, x, mean, variance, eps)
    if ctx.has_arg("weight"):
        y = b.call("multiply", y, cast(b, ctx.tensor("weight"), dtype))
    if ctx.has_arg("bias"):
        y = b.call("add", y, cast(b, ctx.tensor("bias"), dtype))
    rstd = b.call("rsqrt", b.call("add", variance, scalar(b, eps, dtype)))
    return [y, mean, rstd]


@converter("aten.native_group_norm.default")
def group_norm(ctx):
    b = ctx.b
    _unavailable_results(ctx, (1, 2), "the group statistics")
    x = ctx.tensor("input")
    dtype = b.dtype_of(x)
    channels = static_dim(ctx, x, 1, "the channel dimension")
    y = b.call(
        "nn.group_norm",
        x,
        _affine_or_default(ctx, "weight", channels, 1, dtype),
        _affine_or_default(ctx, "bias", channels, 0, dtype),
        num_groups=int(ctx.arg("group")),
        axis=1,
        epsilon=float(ctx.arg("eps")),
    )
    return [y, None, None]


# ---------------------------------------------------------------- dropout


@converter("aten.native_dropout.default", "aten.dropout.default")
def dropout(ctx):
    if ctx.arg("train", False) and float(ctx.arg("p", 0.0)) > 0:
        raise ctx.unsupported("dropout in training mode (export the module in eval mode)")
    x = ctx.tensor("input")
    if ctx.target == "aten.dropout.default":
        return x
    keep_mask = None
    if ctx.output_used(1):
        keep_mask = ctx.b.call("full", ctx.b.const(True), shape=ctx.b.static_shape(x), dtype="bool")
    return [x, keep_mask]
