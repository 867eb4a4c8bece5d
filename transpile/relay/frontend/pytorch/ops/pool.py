"""Converters of ATen pooling, padding and resampling (upsampling, grid sampling).

PyTorch's ceil_mode drops a last window that would start in the right padding; Relay's does not.
`_ceil_mode` reproduces PyTorch's output size: Relay's ceil_mode where the two agree, explicit
extra right padding (which max pooling and padding-excluding averages ignore) where they do not.
"""

from __future__ import annotations

from ....op.registry import lookup
from ....ty import AnyDim
from ..converters import converter
from .support import scalar

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _per_axis(ctx, name, spatial, default):
    values = ctx.ints(name, None) or default
    if len(values) == 1:
        values = values * spatial
    if len(values) != spatial:
        raise ctx.b.error(f"{name}={values} does not give one value per spatial axis ({spatial})")
    return values


def _window(ctx, spatial):
    kernel = _per_axis(ctx, "kernel_size", spatial, None)
    stride = _per_axis(ctx, "stride", spatial, kernel)
    padding = _per_axis(ctx, "padding", spatial, [0])
    dilation = _per_axis(ctx, "dilation", spatial, [1])
    return kernel, stride, padding, dilation


def _ceil_mode(ctx, x, kernel, stride, padding, dilation):
    """(Relay ceil_mode, extra right padding per axis) giving PyTorch's output size."""
    spatial = len(kernel)
    if not ctx.arg("ceil_mode", False):
        return False, [0] * spatial
    sizes = ctx.b.shape_of(x)[-spatial:]
    if any(isinstance(n, AnyDim) for n in sizes):
        return True, [0] * spatial
    floors, ceils, torch_sizes = [], [], []
    for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation):
        span = int(n) + 2 * p - d * (k - 1) - 1
        floors.append(span // s + 1)
        ceil = (span + s - 1) // s + 1
        ceils.append(ceil)
        torch_sizes.append(ceil - 1 if (ceil - 1) * s >= int(n) + p else ceil)
    if torch_sizes == floors:
        return False, [0] * spatial
    if torch_sizes == ceils:
        return True, [0] * spatial
    extra = [
        max(0, (o - 1) * s + d * (k - 1) + 1 - (int(n) + 2 * p))
        for o, n, k, s, p, d in zip(torch_sizes, sizes, kernel, stride, padding, dilation)
    ]
    return False, extra


def _pool_op(ctx, kind, spatial):
    op_name = f"nn.{kind}_pool{spatial}d"
    if lookup(op_name) is None:
        raise ctx.unsupported(f"{op_name} is not in the operator registry")
    return op_name


def _spatial_of(ctx, x, offset=2):
    spatial = ctx.b.ndim_of(x) - offset
    if spatial not in _LAYOUTS:
        raise ctx.unsupported(f"pooling a {ctx.b.ndim_of(x)}-d tensor")
    return spatial


@converter(
    "aten.max_pool2d_with_indices.default",
    "aten.max_pool3d_with_indices.default",
    "aten.max_pool1d_with_indices.default",
    "aten.max_pool2d.default",
    "aten.max_pool1d.default",
    "aten.max_pool3d.default",
)
def max_pool(ctx):
    if ctx.target.endswith("with_indices.default") and ctx.output_used(1):
        raise ctx.unsupported("the argmax indices are used; only the pooled values are imported")
    x = ctx.tensor("self")
    spatial = int(ctx.target.split("max_pool")[1][0])
    if ctx.b.ndim_of(x) != spatial + 2:
        raise ctx.unsupported(f"unbatched {spatial}-d pooling of a {ctx.b.ndim_of(x)}-d tensor")
    kernel, stride, padding, dilation = _window(ctx, spatial)
    ceil_mode, extra = _ceil_mode(ctx, x, kernel, stride, padding, dilation)
    y = ctx.b.call(
        _pool_op(ctx, "max", spatial),
        x,
        pool_size=kernel,
        strides=stride,
        dilation=dilation,
        padding=padding + [p + e for p, e in zip(padding, extra)],
        layout=_LAYOUTS[spatial],
        ceil_mode=ceil_mode,
    )
    return [y, None] if ctx.target.endswith("with_indices.default") else y


@converter("aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default")
def avg_pool(ctx):
    if ctx.arg("divisor_override") is not None:
        raise ctx.unsupported("divisor_override")
    x = ctx.tensor("self")
    spatial = int(ctx.target.split("avg_pool")[1][0])
    if ctx.b.ndim_of(x) != spatial + 2:
        raise ctx.unsupported(f"unbatched {spatial}-d pooling of a {ctx.b.ndim_of(x)}-d tensor")
    kernel, stride, padding, _ = _window(ctx, spatial)
    dilation = [1] * spatial
    include_pad = bool(ctx.arg("count_include_pad", True))
    ceil_mode, extra = _ceil_mode(ctx, x, kernel, stride, padding, dilation)
    if include_pad and any(extra):
        raise ctx.unsupported("ceil_mode with count_include_pad where PyTorch drops the last window on some axes only")
    return ctx.b.call(
        _pool_op(ctx, "avg", spatial),
        x,
        pool_size=kernel,
        strides=stride,
        dilation=dilation,
        padding=padding + [p + e for p, e in zip(padding, extra)],
        layout=_LAYOUTS[spatial],
        ceil_mode=ceil_mode,
        count_include_pad=include_pad,
    )


@converter(
    "aten._adaptive_avg_pool2d.default",
    "aten._adaptive_avg_pool3d.default",
    "aten.adaptive_max_pool1d.default",
    "aten.adaptive_max_pool2d.default",
    "aten.adaptive_max_pool3d.default",
)
def adaptive_pool(ctx):
    kind = "max" if "max" in ctx.target else "avg"
    if kind == "max" and ctx.output_used(1):
        raise ctx.unsupported("the argmax indices are used; only the pooled values are imported")
    x = ctx.tensor("self")
    spatial = int(ctx.target.split("pool")[1][0])
    if ctx.b.ndim_of(x) != spatial + 2:
        raise ctx.unsupported(f"unbatched adaptive pooling of a {ctx.b.ndim_of(x)}-d tensor")
    op_name = f"nn.adaptive_{kind}_pool{spatial}d"
    if lookup(op_name) is None:
        raise ctx.unsupported(f"{op_name} is not in the operator registry")
    y = ctx.b.call(op_name, x, output_size=ctx.ints("output_size"), layout=_LAYOUTS[spatial])
    return [y, None] if kind == "max" else y


# ---------------------------------------------------------------- padding


@converter("aten.constant_pad_nd.default")
def constant_pad(ctx):
    b = ctx.b
    x = ctx.tensor("self")
    widths = _pad_widths(ctx, x, ctx.ints("pad"))
    grown = [(max(0, lo), max(0, hi)) for lo, hi in widths]
    if any(lo or hi for lo, hi in grown):
        value = scalar(b, ctx.arg("value", 0), b.dtype_of(x))
        x = b.call("nn.pad", x, value, pad_width=grown, pad_mode="constant")
    cropped = [(max(0, -lo), max(0, -hi)) for lo, hi in widths]
    if any(lo or hi for lo, hi in cropped):
        shape = b.static_shape(x, "a cropped tensor")
        x = b.call(
            "strided_slice",
            x,
            begin=[lo for lo, _ in cropped],
            end=[n - hi for n, (_, hi) in zip(shape, cropped)],
            strides=[1] * len(shape),
        )
    return x


def _pad_widths(ctx, x, pad):
    """PyTorch's flat (last-dim-first) pad list as (before, after) per dimension."""
    ndim = ctx.b.ndim_of(x)
    if len(pad) % 2 or len(pad) // 2 > ndim:
        raise ctx.b.error(f"pad={pad} does not fit a {ndim}-d tensor")
    widths = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        widths[ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return widths


def _mode_pad(pad_mode):
    def convert(ctx):
        x = ctx.tensor("self")
        widths = _pad_widths(ctx, x, ctx.ints("padding"))
        if any(lo < 0 or hi < 0 for lo, hi in widths):
            raise ctx.unsupported("negative padding")
        return ctx.b.call("nn.pad", x, scalar(ctx.b, 0, ctx.b.dtype_of(x)), pad_width=widths, pad_mode=pad_mode)

    return convert


for _dims in (1, 2, 3):
    converter(f"aten.reflection_pad{_dims}d.default")(_mode_pad("reflect"))
    converter(f"aten.replication_pad{_dims}d.default")(_mode_pad("edge"))


# ---------------------------------------------------------------- upsampling


@converter(
    "aten.upsample_nearest2d.vec",
    "aten.upsample_nearest2d.default",
    "aten.upsample_bilinear2d.vec",
    "aten.upsample_bilinear2d.default",
)
def upsample2d(ctx):
    b = ctx.b
    x = ctx.tensor("input" if ctx.target.endswith(".vec") else "self")
    in_h, in_w = b.static_shape(x, "the upsampled tensor")[2:]
    out_h, out_w = [int(d) for d in ctx.out_meta.shape[2:]]
    nearest = "nearest" in ctx.target
    align_corners = bool(ctx.arg("align_corners", False))
    scales = ctx.arg("scale_factors") or [ctx.arg("scales_h"), ctx.arg("scales_w")]
    for given, n_in, n_out in zip(scales, (in_h, in_w), (out_h, out_w)):
        # PyTorch maps coordinates by 1/scale_factor when one is given; Relay by in/out.
        if given is not None and n_in * float(given) != n_out:
            raise ctx.unsupported(f"scale factor {given} does not divide the output size exactly")
    if nearest or align_corners:
        return b.call(
            "nn.upsampling",
            x,
            scale_h=out_h / in_h,
            scale_w=out_w / in_w,
            layout="NCHW",
            method="nearest_neighbor" if nearest else "bilinear",
            align_corners=align_corners,
        )
    if lookup("image.resize2d") is None:
        raise ctx.unsupported("bilinear upsampling without align_corners needs image.resize2d")
    return b.call(
        "image.resize2d",
        x,
        roi=[0.0, 0.0, 0.0, 0.0],
        size=[out_h, out_w],
        layout="NCHW",
        method="linear",
        coordinate_transformation_mode="half_pixel",
    )


_GRID_METHODS = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@converter("aten.grid_sampler_2d.default", "aten.grid_sampler_3d.default")
def grid_sampler(ctx):
    """PyTorch's grid is (N, *out, 2 or 3), channels last; Relay's image.grid_sample takes it channels first."""
    b = ctx.b
    x, grid = ctx.tensor("input"), ctx.tensor("grid")
    spatial = b.ndim_of(x) - 2
    if lookup("image.grid_sample") is None:
        raise ctx.unsupported("image.grid_sample is not in the operator registry")
    method = _GRID_METHODS.get(int(ctx.arg("interpolation_mode", 0)))
    padding = _GRID_PADDING.get(int(ctx.arg("padding_mode", 0)))
    if method is None or padding is None:
        raise ctx.unsupported(
            f"interpolation_mode={ctx.arg('interpolation_mode')}, padding_mode={ctx.arg('padding_mode')}"
        )
    channels_first = b.call("transpose", grid, axes=[0, spatial + 1] + list(range(1, spatial + 1)))
    return b.call(
        "image.grid_sample",
        x,
        channels_first,
        method=method,
        layout=_LAYOUTS[spatial],
        padding_mode=padding,
        align_corners=bool(ctx.arg("align_corners", False)),
    )
