"""image.grid_sample and image.affine_grid (TVM's GridSampleRel / AffineGridRel), in 2-D and 3-D.

grid_sample reads data (N, C, [D,] H, W) at the normalized coordinates of grid (N, 2 or 3,
[D',] H', W'), whose component 0 is x (along W), 1 is y, 2 is z: TVM's channel-first grid, the
transpose of ONNX's (N, H', W', 2). Numbers as ONNX GridSample's reference (PyTorch's
grid_sampler): nearest rounds half to even, bicubic uses A = -0.75, border padding clamps the
coordinate only beyond the pixel edges, reflection folds as often as needed.

affine_grid maps the target's normalized pixel grid through theta (N, 2, 3) or (N, 3, 4).
`align_corners` (default True, TVM's only behaviour) is a transpile extension for ONNX's AffineGrid.
"""

from __future__ import annotations

import itertools

import numpy as np

from ....ty import TensorType
from ...common import dim_eq, expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import NNOpDef, layout_positions, to_bool, to_ints, to_str
from .grid_sample_te import affine_grid_te, grid_sample_te
from .sampling import GRID_METHODS, NUMPY_OPS, PADDING_MODES, grid_axis_taps, grid_pixel

PRIMAL = {4: "NCHW", 5: "NCDHW"}


def _grid_sample_rel(arg_types, attrs):
    op_name = "image.grid_sample"
    data = expect_tensor(arg_types[0], op_name, "data")
    grid = expect_tensor(arg_types[1], op_name, "grid")
    if data.ndim not in PRIMAL:
        raise RelationError(f"{op_name}: data must have rank 4 (NCHW) or 5 (NCDHW), got {fmt_type(data)}")
    primal = PRIMAL[data.ndim]
    layout_positions(attrs.layout, primal, op_name, f"layout for rank-{data.ndim} data")
    nd = data.ndim - 2
    batch = data.shape[attrs.layout.index("N")]
    if grid.ndim != data.ndim or not dim_eq(grid.shape[0], batch) or not dim_eq(grid.shape[1], nd):
        expected = f"(N={batch}, {nd}, " + ", ".join("out_" + a for a in primal[2:]) + ")"
        raise RelationError(
            f"{op_name}: grid must have shape {expected} for data {fmt_type(data)}, got {fmt_type(grid)}"
        )
    if not grid.dtype.startswith("float"):
        raise RelationError(f"{op_name}: grid must hold floats, got {fmt_type(grid)}")
    for name, value, allowed in (
        ("method", attrs.method, GRID_METHODS),
        ("padding_mode", attrs.padding_mode, PADDING_MODES),
    ):
        if value not in allowed:
            raise RelationError(f"{op_name}: {name} must be one of {', '.join(allowed)}, got {value!r}")
    shape = list(data.shape)
    for axis, size in zip(primal[2:], grid.shape[2:]):
        shape[attrs.layout.index(axis)] = size
    return TensorType(shape, data.dtype)


def _grid_sample_impl(args, attrs, out_type):
    data, grid = args
    primal = PRIMAL[data.ndim]
    nd = data.ndim - 2
    dtype = "float64" if data.dtype == np.float64 else "float32"
    # (N, *spatial, C): one advanced-indexing gather per tap combination gives (N, *out, C).
    channels_last = np.moveaxis(np.transpose(data, [attrs.layout.index(a) for a in primal]), 1, -1).astype(dtype)
    sizes = channels_last.shape[1:-1]
    g = grid.astype(dtype)
    axes = [
        grid_axis_taps(
            g[:, nd - 1 - i], sizes[i], attrs.method, attrs.padding_mode, attrs.align_corners, dtype, NUMPY_OPS
        )
        for i in range(nd)
    ]
    batch = np.arange(data.shape[0]).reshape((-1,) + (1,) * nd)
    out = np.zeros(grid.shape[:1] + grid.shape[2:] + channels_last.shape[-1:], dtype=dtype)
    for taps in itertools.product(*[range(len(weights)) for _, weights in axes]):
        index, weight, outside = [batch], None, None
        for size, (first, weights), k in zip(sizes, axes, taps):
            pixel, beyond = grid_pixel(first + k, size, attrs.padding_mode, attrs.align_corners, dtype, NUMPY_OPS)
            index.append(pixel.astype(np.intp))
            if weights[k] is not None:
                weight = weights[k] if weight is None else weight * weights[k]
            if beyond is not None:
                outside = beyond if outside is None else outside | beyond
        values = channels_last[tuple(index)]
        contribution = values if weight is None else values * weight[..., None]
        if outside is not None:
            contribution = np.where(outside[..., None], 0.0, contribution)
        out += contribution
    out = np.moveaxis(out, -1, 1)
    return np.transpose(out, [primal.index(a) for a in attrs.layout]).astype(data.dtype)


def _affine_grid_rel(arg_types, attrs):
    op_name = "image.affine_grid"
    data = expect_tensor(arg_types[0], op_name, "data")
    nd = len(attrs.target_shape)
    if nd not in (2, 3):
        raise RelationError(
            f"{op_name}: target_shape must have 2 (H, W) or 3 (D, H, W) values, got {list(attrs.target_shape)}"
        )
    if any(s is None or s < 1 for s in attrs.target_shape):
        raise RelationError(f"{op_name}: target_shape must be positive, got {list(attrs.target_shape)}")
    if data.ndim != 3 or not dim_eq(data.shape[1], nd) or not dim_eq(data.shape[2], nd + 1):
        raise RelationError(
            f"{op_name}: data must be affine matrices of shape (batch, {nd}, {nd + 1}) for a {nd}-D target_shape, "
            f"got {fmt_type(data)}"
        )
    if not data.dtype.startswith("float"):
        raise RelationError(f"{op_name}: data must hold floats, got {fmt_type(data)}")
    return TensorType([data.shape[0], nd, *attrs.target_shape], data.dtype)


def base_coordinates(size: int, align_corners: bool) -> np.ndarray:
    """Normalized coordinates of the pixels of one axis: corner pixel centres at -1 and 1, or pixel edges."""
    index = np.arange(size, dtype=np.float64)
    if align_corners:
        return index * (2.0 / (size - 1)) - 1.0 if size > 1 else np.zeros(1)
    return (2.0 * index + 1.0) / size - 1.0


def _affine_grid_impl(args, attrs, out_type):
    theta = args[0].astype(np.float64)
    target = attrs.target_shape
    nd = len(target)
    if theta.shape[1:] != (nd, nd + 1):  # the relation's promise, for `?` dims
        raise ValueError(f"image.affine_grid: theta of shape {theta.shape} for a {nd}-D target (needs (N, {nd}, {nd + 1}))")
    # Component j of a pixel's position: x (the last axis) first.
    grids = np.meshgrid(*[base_coordinates(s, attrs.align_corners) for s in target], indexing="ij")[::-1]
    out = theta[:, :, nd].reshape(theta.shape[:2] + (1,) * nd).copy()
    for j, coordinate in enumerate(grids):
        out = out + theta[:, :, j].reshape(theta.shape[:2] + (1,) * nd) * coordinate
    return out.astype(args[0].dtype)


register(
    NNOpDef(
        "image.grid_sample",
        2,
        _grid_sample_rel,
        OpPattern.INJECTIVE,
        _grid_sample_impl,
        te_impl=grid_sample_te,
        attrs=(
            AttrField("method", "bilinear", to_str, "nearest, bilinear or bicubic"),
            AttrField("layout", "NCHW", to_str, "NCHW, or NCDHW for 3-D data"),
            AttrField("padding_mode", "zeros", to_str, "zeros, border or reflection"),
            AttrField("align_corners", True, to_bool, "-1 and 1 are the centres (not the edges) of the corner pixels"),
        ),
        description="Sample data at the normalized coordinates of a grid (spatial transformer networks).",
    )
)
register(
    NNOpDef(
        "image.affine_grid",
        1,
        _affine_grid_rel,
        OpPattern.INJECTIVE,
        _affine_grid_impl,
        te_impl=affine_grid_te,
        attrs=(
            AttrField("target_shape", convert=to_ints, doc="(H, W) or (D, H, W) of the grid"),
            AttrField("align_corners", True, to_bool, "transpile extension (TVM: always True)"),
        ),
        description="A sampling grid for grid_sample: the target's normalized pixel grid through affine matrices.",
    )
)
