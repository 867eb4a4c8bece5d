"""TE lowerings of vision.roi_align and vision.roi_pool: TIR loops (a bin's sample grid and pixel
range depend on the roi's values, which a te.compute reduction cannot express), following roi.py.
tvm is imported inside the functions.
"""

from __future__ import annotations

from .nms_te import scalar_load

__all__ = ["roi_align_te", "roi_pool_te"]


def _layout_access(buffer, layout: str):
    """pixel(n, c, y, x) of an NCHW or NHWC buffer."""
    if layout == "NCHW":
        return lambda n, c, y, x: buffer[n, c, y, x]
    return lambda n, c, y, x: buffer[n, y, x, c]


def _dims(data, layout: str):
    if layout == "NCHW":
        return data.shape[0], data.shape[1], data.shape[2], data.shape[3]
    return data.shape[0], data.shape[3], data.shape[1], data.shape[2]


def _out_shape(rois, channels, attrs):
    ph, pw = attrs.pooled_size
    return (rois.shape[0], channels, ph, pw) if attrs.layout == "NCHW" else (rois.shape[0], ph, pw, channels)


def _batch_check(rois, batch, name: str):
    from tvm import tirx

    from ..te_support import require_values
    from .roi import BAD_BATCH

    def valid(r):
        index = rois[r, 0].astype("int64")
        return tirx.And(index >= 0, index < batch)

    return require_values((rois.shape[0],), valid, f"{name}: {BAD_BATCH}")


def _roi_align_ir(data, rois, check, out, attrs):
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    batch, channels, height, width = _dims(data, attrs.layout)
    ph, pw = attrs.pooled_size
    f32 = lambda v: tirx.const(v, "float32") if isinstance(v, (int, float)) else v.astype("float32")  # noqa: E731
    with IRBuilder() as builder:
        x, r_buf, o = T.buffer_proxy(data), T.buffer_proxy(rois), T.buffer_proxy(out)
        pixel = _layout_access(x, attrs.layout)
        with T.parallel(0, rois.shape[0]) as r:
            scale = f32(attrs.spatial_scale)
            n = tirx.max(tirx.min(r_buf[r, 0].astype("int32"), batch - 1), 0)
            x1, y1 = f32(r_buf[r, 1]) * scale, f32(r_buf[r, 2]) * scale
            x2, y2 = f32(r_buf[r, 3]) * scale, f32(r_buf[r, 4]) * scale
            geometry = T.buffer_proxy(T.decl_buffer([4], "float32", scope="local"))  # roi h, w, bin h, w
            grid = T.buffer_proxy(T.decl_buffer([2], "int32", scope="local"))
            acc = T.buffer_proxy(T.decl_buffer([1], "float32", scope="local"))
            geometry[0] = tirx.max(y2 - y1, f32(1.0))
            geometry[1] = tirx.max(x2 - x1, f32(1.0))
            geometry[2] = geometry[0] / f32(float(ph))
            geometry[3] = geometry[1] / f32(float(pw))
            if attrs.sample_ratio > 0:
                grid[0] = attrs.sample_ratio
                grid[1] = attrs.sample_ratio
            else:
                grid[0] = tirx.ceil(geometry[0] / f32(float(ph))).astype("int32")
                grid[1] = tirx.ceil(geometry[1] / f32(float(pw))).astype("int32")
            count = f32(tirx.max(grid[0] * grid[1], 1))
            with T.serial(0, channels) as c:
                with T.serial(0, ph) as i:
                    with T.serial(0, pw) as j:
                        acc[0] = f32(0.0) if attrs.mode == "avg" else tirx.min_value("float32")
                        with T.serial(0, grid[0]) as gy:
                            with T.serial(0, grid[1]) as gx:
                                y = y1 + f32(i) * geometry[2] + (f32(gy) + f32(0.5)) * geometry[2] / f32(grid[0])
                                xx = x1 + f32(j) * geometry[3] + (f32(gx) + f32(0.5)) * geometry[3] / f32(grid[1])
                                far = tirx.any(y < f32(-1.0), y > f32(height), xx < f32(-1.0), xx > f32(width))
                                yc = tirx.max(tirx.min(y, f32(height - 1)), f32(0.0))
                                xc = tirx.max(tirx.min(xx, f32(width - 1)), f32(0.0))
                                y_low, x_low = tirx.floor(yc), tirx.floor(xc)
                                y_frac, x_frac = yc - y_low, xc - x_low
                                yl, xl = y_low.astype("int32"), x_low.astype("int32")
                                total = None
                                for dy, wy in ((0, f32(1.0) - y_frac), (1, y_frac)):
                                    for dx, wx in ((0, f32(1.0) - x_frac), (1, x_frac)):
                                        inside = tirx.all(yl + dy < height, xl + dx < width)
                                        value = f32(
                                            pixel(n, c, tirx.min(yl + dy, height - 1), tirx.min(xl + dx, width - 1))
                                        )
                                        term = tirx.Select(inside, value * (wy * wx), f32(0.0))
                                        total = term if total is None else total + term
                                sample = tirx.Select(far, f32(0.0), total)
                                if attrs.mode == "avg":
                                    acc[0] = acc[0] + sample / count
                                else:
                                    acc[0] = tirx.max(acc[0], sample)
                        result = acc[0]
                        if attrs.mode == "max":
                            result = tirx.Select(grid[0] * grid[1] > 0, result, f32(0.0))
                        index = (r, c, i, j) if attrs.layout == "NCHW" else (r, i, j, c)
                        o[index] = tirx.Select(scalar_load(check), result, f32(0.0)).astype(str(out.dtype))
        return builder.get()


def roi_align_te(inputs, attrs, out_type):
    from tvm import te

    data, rois = inputs
    batch, channels, _, _ = _dims(data, attrs.layout)
    check = _batch_check(rois, batch, "vision.roi_align")
    return te.extern(
        _out_shape(rois, channels, attrs),
        [data, rois, check],
        lambda ins, outs: _roi_align_ir(ins[0], ins[1], ins[2], outs[0], attrs),
        dtype=str(data.dtype),
        name="T_roi_align",
    )


def _roi_pool_ir(data, rois, check, out, attrs):
    from tvm import tirx
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as T

    batch, channels, height, width = _dims(data, attrs.layout)
    ph, pw = attrs.pooled_size
    dtype = str(data.dtype)
    f32 = lambda v: tirx.const(v, "float32") if isinstance(v, (int, float)) else v.astype("float32")  # noqa: E731
    with IRBuilder() as builder:
        x, r_buf, o = T.buffer_proxy(data), T.buffer_proxy(rois), T.buffer_proxy(out)
        pixel = _layout_access(x, attrs.layout)
        with T.parallel(0, rois.shape[0]) as r:
            scale = f32(attrs.spatial_scale)
            n = tirx.max(tirx.min(r_buf[r, 0].astype("int32"), batch - 1), 0)
            corner = T.buffer_proxy(T.decl_buffer([4], "int32", scope="local"))  # x1, y1, x2, y2
            span = T.buffer_proxy(T.decl_buffer([4], "int32", scope="local"))  # top, bottom, left, right
            acc = T.buffer_proxy(T.decl_buffer([1], dtype, scope="local"))
            for k in range(4):
                corner[k] = tirx.round(f32(r_buf[r, k + 1]) * scale).astype("int32")
            bin_h = f32(tirx.max(corner[3] - corner[1] + 1, 1)) / f32(float(ph))
            bin_w = f32(tirx.max(corner[2] - corner[0] + 1, 1)) / f32(float(pw))
            eps = f32(1e-5)

            def clamp(v, high):
                return tirx.min(tirx.max(v, 0), high)

            with T.serial(0, ph) as i:
                with T.serial(0, pw) as j:
                    span[0] = clamp(tirx.floor(f32(i) * bin_h + eps).astype("int32") + corner[1], height)
                    span[1] = clamp(tirx.ceil(f32(i + 1) * bin_h - eps).astype("int32") + corner[1], height)
                    span[2] = clamp(tirx.floor(f32(j) * bin_w + eps).astype("int32") + corner[0], width)
                    span[3] = clamp(tirx.ceil(f32(j + 1) * bin_w - eps).astype("int32") + corner[0], width)
                    with T.serial(0, channels) as c:
                        acc[0] = tirx.const(0, dtype)
                        with T.If(tirx.all(span[1] > span[0], span[3] > span[2])):
                            with T.Then():
                                acc[0] = tirx.min_value(dtype)
                                with T.serial(0, span[1] - span[0]) as dy:
                                    with T.serial(0, span[3] - span[2]) as dx:
                                        acc[0] = tirx.max(acc[0], pixel(n, c, span[0] + dy, span[2] + dx))
                        index = (r, c, i, j) if attrs.layout == "NCHW" else (r, i, j, c)
                        o[index] = tirx.Select(scalar_load(check), acc[0], tirx.const(0, dtype))
        return builder.get()


def roi_pool_te(inputs, attrs, out_type):
    from tvm import te

    data, rois = inputs
    batch, channels, _, _ = _dims(data, attrs.layout)
    check = _batch_check(rois, batch, "vision.roi_pool")
    return te.extern(
        _out_shape(rois, channels, attrs),
        [data, rois, check],
        lambda ins, outs: _roi_pool_ir(ins[0], ins[1], ins[2], outs[0], attrs),
        dtype=str(data.dtype),
        name="T_roi_pool",
    )
