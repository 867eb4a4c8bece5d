"""Converters of ONNX spatial rearrangement and sampling: DepthToSpace, SpaceToDepth, GridSample, AffineGrid."""

from __future__ import annotations

import numpy as np

from ..converters import converter

_BLOCK_MODES = ("DCR", "CRD")


def _block_size(ctx) -> int:
    block = ctx.attr("blocksize")
    if block is None or int(block) < 1:
        raise ctx.b.error(f"attribute blocksize must be a positive integer, got {block}")
    return int(block)


def _image(ctx, what: str):
    data = ctx.input(0)
    shape = ctx.b.shape_of(data)
    if len(shape) != 4:
        raise ctx.b.error(f"{what} takes an N x C x H x W tensor, got {ctx.b.type_of(data)}")
    return data, shape


@converter("DepthToSpace")
def depth_to_space(ctx):
    data, shape = _image(ctx, "DepthToSpace")
    block = _block_size(ctx)
    mode = ctx.attr("mode", "DCR")
    if mode not in _BLOCK_MODES:
        raise ctx.b.error(f"mode must be DCR or CRD, got {mode!r}")
    if isinstance(shape[1], int) and shape[1] % (block * block):
        raise ctx.b.error(f"the {shape[1]} channels are not divisible by blocksize^2 = {block * block}")
    return ctx.b.call("nn.depth_to_space", data, block_size=block, layout="NCHW", mode=mode)


@converter("SpaceToDepth")
def space_to_depth(ctx):
    b = ctx.b
    data, shape = _image(ctx, "SpaceToDepth")
    block = _block_size(ctx)
    mode = ctx.attr("mode", "DCR") if ctx.opset >= 28 else "DCR"
    if mode not in _BLOCK_MODES:
        raise b.error(f"mode must be DCR or CRD, got {mode!r}")
    _, channels, height, width = shape
    if any(isinstance(d, int) and d % block for d in (height, width)):
        raise b.error(f"the spatial dimensions of {b.type_of(data)} are not divisible by blocksize {block}")
    if mode == "DCR":
        return b.call("nn.space_to_depth", data, block_size=block, layout="NCHW")
    # CRD: each channel's block of pixels stays together, (c, row offset, column offset).
    if not all(isinstance(d, int) for d in (channels, height, width)):
        raise b.error(f"SpaceToDepth (CRD) needs the channels and spatial sizes at import, got {b.type_of(data)}")
    blocks = b.call("reshape", data, newshape=(0, channels, height // block, block, width // block, block))
    moved = b.call("transpose", blocks, axes=(0, 1, 3, 5, 2, 4))
    return b.call("reshape", moved, newshape=(0, channels * block * block, height // block, width // block))


# ---------------------------------------------------------------------------------- grids

_GRID_METHODS = {
    "bilinear": "bilinear",
    "linear": "bilinear",
    "nearest": "nearest",
    "bicubic": "bicubic",
    "cubic": "bicubic",
}
_PADDING_MODES = ("zeros", "border", "reflection")


@converter("GridSample")
def grid_sample(ctx):
    b = ctx.b
    data, grid = ctx.input(0), ctx.input(1)
    rank = b.ndim_of(data)
    if rank not in (4, 5) or b.ndim_of(grid) != rank:
        raise ctx.unsupported(f"GridSample of a rank-{rank} input (Relay samples 2-D and 3-D images)")
    mode = ctx.attr("mode", "bilinear" if ctx.opset < 20 else "linear")
    if mode not in _GRID_METHODS:
        raise b.error(f"mode must be one of {', '.join(_GRID_METHODS)}, got {mode!r}")
    method = _GRID_METHODS[mode]
    if rank == 5 and method == "bicubic":
        raise ctx.unsupported("cubic sampling of a volume (Relay's 3-D grid_sample is nearest or linear)")
    padding_mode = ctx.attr("padding_mode", "zeros")
    if padding_mode not in _PADDING_MODES:
        raise b.error(f"padding_mode must be one of {', '.join(_PADDING_MODES)}, got {padding_mode!r}")
    # ONNX puts the coordinates last (N, H, W, 2), Relay right after the batch (N, 2, H, W).
    grid = b.call("transpose", grid, axes=(0, rank - 1) + tuple(range(1, rank - 1)))
    return b.call(
        "image.grid_sample",
        data,
        grid,
        method=method,
        layout="NCHW" if rank == 4 else "NCDHW",
        padding_mode=padding_mode,
        align_corners=bool(ctx.attr("align_corners", 0)),
    )


def _base_grid(sizes, align_corners: bool) -> np.ndarray:
    """(prod(sizes), nd + 1) homogeneous normalized coordinates, x (the last axis) first."""
    axes = []
    for size in sizes:
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, size) if size > 1 else np.array([-1.0]))
        else:
            axes.append((np.arange(size) * 2.0 + 1.0) / size - 1.0)
    mesh = np.meshgrid(*axes, indexing="ij")
    columns = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(int(np.prod(sizes)))]
    return np.stack(columns, axis=1)


@converter("AffineGrid")
def affine_grid(ctx):
    b = ctx.b
    theta = ctx.input(0)
    size = ctx.input_value(1, "the size input of AffineGrid")
    if size is None:
        raise b.error("input 1 (size) is required")
    size = [int(v) for v in np.asarray(size).reshape(-1)]
    nd = len(size) - 2
    if nd not in (2, 3):
        raise b.error(f"size must be (N, C, H, W) or (N, C, D, H, W), got {size}")
    if b.shape_of(theta)[1:] != [nd, nd + 1]:
        raise b.error(f"theta must be N x {nd} x {nd + 1} for a {nd}-D size, got {b.type_of(theta)}")
    dtype = b.dtype_of(theta)
    base = b.const(_base_grid(size[2:], bool(ctx.attr("align_corners", 0))).astype(dtype)[None])
    # (1, P, nd + 1) x (N, nd, nd + 1)^T -> (N, P, nd): every point through its batch's transform.
    points = b.call("nn.batch_matmul", base, theta, transpose_a=False, transpose_b=True)
    return b.call("reshape", points, newshape=(size[0],) + tuple(size[2:]) + (nd,))
