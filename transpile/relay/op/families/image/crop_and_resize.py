"""image.crop_and_resize: TensorFlow's CropAndResize (TVM's CropAndResizeRel and topi.image.crop_and_resize).

Box b = (y1, x1, y2, x2), normalized, of image box_indices[b]; output row y samples the input at
y1 * (H - 1) + y * (y2 - y1) * (H - 1) / (crop_h - 1) (the box centre when crop_h is 1), in
float32 as TVM computed it. Samples outside [0, H - 1] give extrapolation_value; bilinear
interpolates a * (1 - t) + b * t, nearest_neighbor rounds half to even (TVM's te.round).
"""

from __future__ import annotations

import numpy as np

from ....ty import TensorType
from ...common import expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import NNOpDef, to_dtype, to_float, to_ints, to_str
from .resize import saturate

LAYOUTS = ("NCHW", "NHWC")
METHODS = ("bilinear", "nearest_neighbor")
BAD_INDEX = "image.crop_and_resize: box_indices must index the images of data"


def _crop_and_resize_rel(arg_types, attrs):
    name = "image.crop_and_resize"
    data = expect_tensor(arg_types[0], name, "data")
    boxes = expect_tensor(arg_types[1], name, "boxes")
    box_indices = expect_tensor(arg_types[2], name, "box_indices")
    if attrs.layout not in LAYOUTS:
        raise RelationError(f"{name}: layout must be NCHW or NHWC, got {attrs.layout!r}")
    if attrs.method not in METHODS:
        raise RelationError(f"{name}: method must be 'bilinear' or 'nearest_neighbor', got {attrs.method!r}")
    if data.ndim != 4:
        raise RelationError(f"{name}: data must be a 4-D {attrs.layout} tensor, got {fmt_type(data)}")
    if boxes.ndim != 2 or (isinstance(boxes.shape[1], int) and boxes.shape[1] != 4):
        raise RelationError(f"{name}: boxes must be (num_boxes, 4), got {fmt_type(boxes)}")
    if box_indices.ndim != 1 or not box_indices.dtype.startswith(("int", "uint")):
        raise RelationError(f"{name}: box_indices must be a 1-D integer tensor, got {fmt_type(box_indices)}")
    if len(attrs.crop_size) != 2 or any(s is None or s < 1 for s in attrs.crop_size):
        raise RelationError(f"{name}: crop_size must be 2 positive extents, got {list(attrs.crop_size)}")
    height, width = attrs.crop_size
    channels = data.shape[1] if attrs.layout == "NCHW" else data.shape[3]
    shape = (
        (boxes.shape[0], channels, height, width)
        if attrs.layout == "NCHW"
        else (boxes.shape[0], height, width, channels)
    )
    return TensorType(shape, attrs.out_dtype or data.dtype)


def _source_coordinates(start, end, in_size: int, out_size: int, ops):
    """The float32 input coordinate of each output position (positions broadcast against the box)."""
    last = ops["f32"](in_size - 1)
    if out_size > 1:
        return lambda y: start * last + y * (end - start) * last / ops["f32"](out_size - 1)
    return lambda y: ops["f32"](0.5) * (start + end) * last


def _crop_and_resize_impl(args, attrs, out_type):
    data, boxes, box_indices = (np.asarray(a) for a in args)
    if box_indices.size and (box_indices.min() < 0 or box_indices.max() >= data.shape[0]):
        raise ValueError(BAD_INDEX)
    images = data if attrs.layout == "NHWC" else data.transpose(0, 2, 3, 1)
    _, in_h, in_w, _ = images.shape
    crop_h, crop_w = attrs.crop_size
    boxes = boxes.astype(np.float32)
    ops = {"f32": np.float32}
    ys = _source_coordinates(boxes[:, 0:1], boxes[:, 2:3], in_h, crop_h, ops)(np.arange(crop_h, dtype=np.float32))
    xs = _source_coordinates(boxes[:, 1:2], boxes[:, 3:4], in_w, crop_w, ops)(np.arange(crop_w, dtype=np.float32))
    ys = np.broadcast_to(ys, (len(boxes), crop_h)).astype(np.float32)
    xs = np.broadcast_to(xs, (len(boxes), crop_w)).astype(np.float32)
    images_of_boxes = box_indices.astype(np.intp)[:, None, None]

    def pixels(y_index, x_index):
        # Gathers only the sampled pixels: (boxes, crop_h, crop_w, C), never a whole image per box.
        y_index = np.clip(y_index, 0, in_h - 1)[:, :, None]
        x_index = np.clip(x_index, 0, in_w - 1)[:, None, :]
        return images[images_of_boxes, y_index, x_index].astype(np.float32)

    if attrs.method == "nearest_neighbor":
        values = pixels(np.rint(ys).astype(np.int64), np.rint(xs).astype(np.int64))
    else:
        top, left = np.floor(ys), np.floor(xs)
        y_frac, x_frac = (ys - top)[:, :, None, None], (xs - left)[:, None, :, None]
        top, left = top.astype(np.int64), left.astype(np.int64)
        one = np.float32(1)

        def lerp(a, b, t):
            return a * (one - t) + b * t

        upper = lerp(pixels(top, left), pixels(top, left + 1), x_frac)
        lower = lerp(pixels(top + 1, left), pixels(top + 1, left + 1), x_frac)
        values = lerp(upper, lower, y_frac)
    outside = ((ys < 0) | (ys > in_h - 1))[:, :, None, None] | ((xs < 0) | (xs > in_w - 1))[:, None, :, None]
    values = np.where(outside, np.float32(attrs.extrapolation_value), values)
    if attrs.layout == "NCHW":
        values = values.transpose(0, 3, 1, 2)
    return saturate(values, np.dtype(out_type.dtype))


def _crop_and_resize_te(inputs, attrs, out_type):
    from tvm import te, tirx

    from ..te_support import checked, require_values
    from .resize_te import saturate_te

    data, boxes, box_indices = inputs
    nchw = attrs.layout == "NCHW"
    in_h, in_w = (data.shape[2], data.shape[3]) if nchw else (data.shape[1], data.shape[2])
    crop_h, crop_w = attrs.crop_size
    f32 = lambda value: (
        tirx.const(value, "float32") if isinstance(value, (int, float)) else value.astype("float32")
    )  # noqa: E731
    ops = {"f32": f32}
    check = require_values(
        (box_indices.shape[0],),
        lambda b: tirx.And(box_indices[b] >= 0, box_indices[b].astype("int64") < data.shape[0]),
        BAD_INDEX,
    )

    def element(b, *rest):
        channel, y, x = (rest[0], rest[1], rest[2]) if nchw else (rest[2], rest[0], rest[1])
        image = tirx.max(tirx.min(box_indices[b].astype("int32"), data.shape[0] - 1), 0)
        in_y = _source_coordinates(f32(boxes[b, 0]), f32(boxes[b, 2]), in_h, crop_h, ops)(f32(y))
        in_x = _source_coordinates(f32(boxes[b, 1]), f32(boxes[b, 3]), in_w, crop_w, ops)(f32(x))

        def pixel(y_index, x_index):
            y_index = tirx.max(tirx.min(y_index, in_h - 1), 0)
            x_index = tirx.max(tirx.min(x_index, in_w - 1), 0)
            index = (image, channel, y_index, x_index) if nchw else (image, y_index, x_index, channel)
            return data(*index).astype("float32")

        if attrs.method == "nearest_neighbor":
            value = pixel(te.round(in_y).astype("int32"), te.round(in_x).astype("int32"))
        else:
            top, left = te.floor(in_y), te.floor(in_x)
            y_frac, x_frac = in_y - top, in_x - left
            top, left = top.astype("int32"), left.astype("int32")
            one = f32(1.0)

            def lerp(a, b, t):
                return a * (one - t) + b * t

            upper = lerp(pixel(top, left), pixel(top, left + 1), x_frac)
            lower = lerp(pixel(top + 1, left), pixel(top + 1, left + 1), x_frac)
            value = lerp(upper, lower, y_frac)
        outside = tirx.any(in_y < f32(0.0), in_y > f32(in_h - 1), in_x < f32(0.0), in_x > f32(in_w - 1))
        value = tirx.Select(outside, f32(float(attrs.extrapolation_value)), value)
        return checked(check, saturate_te(value, "float32", str(out_type.dtype)))

    channels = data.shape[1] if nchw else data.shape[3]
    shape = (boxes.shape[0], channels, crop_h, crop_w) if nchw else (boxes.shape[0], crop_h, crop_w, channels)
    return te.compute(shape, element, name="T_crop_and_resize", tag="injective")


def _normalize(given: dict) -> dict:
    if given.get("out_dtype") is None:
        given["out_dtype"] = ""
    return given


register(
    NNOpDef(
        "image.crop_and_resize",
        3,
        _crop_and_resize_rel,
        OpPattern.INJECTIVE,
        _crop_and_resize_impl,
        te_impl=_crop_and_resize_te,
        attrs=(
            AttrField("crop_size", convert=to_ints, doc="(height, width) of every crop"),
            AttrField("layout", "NCHW", to_str, "NCHW or NHWC"),
            AttrField("method", "bilinear", to_str, "bilinear or nearest_neighbor"),
            AttrField("extrapolation_value", 0.0, to_float, "the value of samples outside the image"),
            AttrField("out_dtype", "", to_dtype, "empty means the data dtype"),
        ),
        extras={
            "input_names": ("data", "boxes", "box_indices"),
            "builder_normalize": _normalize,
            "support_level": 5,
        },
        description="Crop boxes out of images and resize each crop to crop_size.",
    )
)
