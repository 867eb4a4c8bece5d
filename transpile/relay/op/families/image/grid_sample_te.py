"""TE lowerings of image.grid_sample and image.affine_grid, in the arithmetic of their numpy references.

grid_sample is one injective stage: per output position, the per-axis taps of sampling.py (in
float32, or float64 for float64 data), a tensor product of weighted pixel reads. topi's
grid_sample is not used: its bicubic border padding clamps differently from ONNX.
"""

from __future__ import annotations

import itertools

from .resize_te import value_dtype
from .sampling import grid_axis_taps, grid_pixel, te_ops


def grid_sample_te(inputs, attrs, out_type):
    from tvm import te, tirx

    from ..nn.te_common import dims, output_shape, permute, static_extent
    from .grid_sample import PRIMAL

    data, grid = inputs
    rank = len(data.shape)
    primal = PRIMAL[rank]
    nd = rank - 2
    data = permute(data, attrs.layout, primal)
    from ..te_support import require_equal

    require_equal((data.shape[0], grid.shape[0]), "image.grid_sample: the grid's batch differs from the data's")
    sizes = [static_extent(d, "image.grid_sample", "data extent") for d in data.shape[2:]]
    acc = value_dtype(str(data.dtype))
    # No let-bound temporaries: taps are shared between the products of every tap combination, so
    # a Let would bind one variable several times in one expression (ill-formed TIR: no schedule).
    ops = te_ops(let_bound=False)
    # `?` extents: batch and channels are the data's, the sampled ones the grid's.
    known = dict(zip(primal, dims(data)[:2] + dims(grid)[2:]))
    out_shape = output_shape(out_type, {i: known[a] for i, a in enumerate(attrs.layout)}, "image.grid_sample")
    out_shape = [out_shape[attrs.layout.index(a)] for a in primal]

    def element(n, c, *position):
        # Per axis: for each tap k, (pixel index, outside mask or None, weight or None).
        axes = []
        for i in range(nd):
            g = grid(n, nd - 1 - i, *position).astype(acc)
            first, weights = grid_axis_taps(
                g, sizes[i], attrs.method, attrs.padding_mode, attrs.align_corners, acc, ops
            )
            taps = []
            for k, weight in enumerate(weights):
                pixel, beyond = grid_pixel(
                    first + float(k), sizes[i], attrs.padding_mode, attrs.align_corners, acc, ops
                )
                taps.append((pixel.astype("int32"), beyond, weight))
            axes.append(taps)
        total = None
        for combination in itertools.product(*axes):
            source = [n, c] + [pixel for pixel, _, _ in combination]
            outside = [beyond for _, beyond, _ in combination if beyond is not None]
            weight = None
            for _, _, factor in combination:
                if factor is not None:
                    weight = factor if weight is None else weight * factor
            value = data(*source).astype(acc)
            term = value if weight is None else value * weight
            if outside:  # the whole term: a nan coordinate's weight is nan too
                term = tirx.Select(tirx.any(*outside), tirx.const(0.0, acc), term)
            total = term if total is None else total + term
        return total.astype(str(out_type.dtype))

    out = te.compute(out_shape, element, name="T_grid_sample", tag="injective")
    return permute(out, primal, attrs.layout)


def affine_grid_te(inputs, attrs, out_type):
    from tvm import te

    theta = inputs[0]
    target = [int(s) for s in attrs.target_shape]
    nd = len(target)
    from ..te_support import require_equal

    require_equal((theta.shape[1], nd), f"image.affine_grid: theta must have {nd} rows")
    require_equal((theta.shape[2], nd + 1), f"image.affine_grid: theta must have {nd + 1} columns")
    acc = value_dtype(str(theta.dtype))

    def coordinate(index, size):
        # base_coordinates of grid_sample.py, per pixel.
        position = index.astype(acc)
        if attrs.align_corners:
            return position * (2.0 / (size - 1)) - 1.0 if size > 1 else position * 0.0
        return (2.0 * position + 1.0) / size - 1.0

    def element(n, k, *position):
        total = theta[n, k, nd].astype(acc)
        for j in range(nd):
            axis = nd - 1 - j  # component j (x first) runs along the j-th axis from the end
            total = total + theta[n, k, j].astype(acc) * coordinate(position[axis], target[axis])
        return total.astype(str(out_type.dtype))

    from ..nn.te_common import dims, output_shape

    shape = output_shape(out_type, {0: dims(theta)[0]}, "image.affine_grid")
    return te.compute(shape, element, name="T_affine_grid", tag="injective")
