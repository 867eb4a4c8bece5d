"""TE lowering of image.resize{1,2,3}d: one injective stage summing the tensor product of per-axis taps.

Coordinates and weights come from sampling.py in float64, exactly as numpy_impl computes them;
pixel values are summed in float32 (float64 for float64 and integer data). topi.image.resize is
not used: it has no half_pixel_symmetric or ONNX scales, and its cubic exclusion tests the wrong
border.
"""

from __future__ import annotations

import itertools

import numpy as np

from .sampling import axis_taps, effective_rounding, source_coordinate, te_ops


def value_dtype(dtype: str) -> str:
    """The dtype pixel values are interpolated in."""
    return "float32" if dtype in ("float16", "float32") else "float64"


def saturate_te(value, value_dtype: str, dtype: str):
    """`value` (of `value_dtype`) as `dtype`; integers round half to even and clip (ONNX's saturate_cast)."""
    from tvm import te, tirx

    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        low, high = tirx.const(float(info.min), value_dtype), tirx.const(float(info.max), value_dtype)
        value = tirx.max(tirx.min(te.round(value), high), low)
    return value.astype(dtype)


def resize_te(op_name: str, nd: int):
    def te_impl(inputs, attrs, out_type):
        from tvm import te, tirx

        from ..nn.te_common import dims, output_shape, static_extent
        from .resize import PRIMAL, axis_plan

        data = inputs[0]
        positions = [attrs.layout.index(a) for a in PRIMAL[nd][2:]]
        extents = [static_extent(data.shape[p], op_name, "spatial extent") for p in positions]
        plan = axis_plan(attrs, nd, extents)
        mode = attrs.coordinate_transformation_mode
        rounding = effective_rounding(attrs.rounding_method, mode)
        acc = value_dtype(str(data.dtype))
        ops = te_ops()

        def element(*index):
            axes, outside = [], []
            for position, (in_size, out_size, scale, start, end) in zip(positions, plan):
                coord = source_coordinate(index[position].astype("float64"), in_size, out_size, scale, mode, start, end)
                first, weights = axis_taps(
                    coord, in_size, attrs.method, rounding, attrs.cubic_alpha, bool(attrs.cubic_exclude), ops
                )
                axes.append((position, in_size, first.astype("int32"), weights))
                if mode == "tf_crop_and_resize":
                    outside += [coord < 0.0, coord > float(in_size - 1)]
            total = None
            for taps in itertools.product(*[range(len(weights)) for *_, weights in axes]):
                source, weight = list(index), None
                for (position, in_size, first, weights), k in zip(axes, taps):
                    source[position] = tirx.max(tirx.min(first + k, in_size - 1), 0)
                    if weights[k] is not None:
                        weight = weights[k] if weight is None else weight * weights[k]
                value = data(*source).astype(acc)
                term = value if weight is None else value * weight.astype(acc)
                total = term if total is None else total + term
            if outside:
                total = tirx.Select(tirx.any(*outside), tirx.const(attrs.extrapolation_value, acc), total)
            return saturate_te(total, acc, str(out_type.dtype))

        kept = {i: dim for i, dim in enumerate(dims(data)) if i not in positions}
        return te.compute(output_shape(out_type, kept, op_name), element, name="T_resize", tag="injective")

    return te_impl
