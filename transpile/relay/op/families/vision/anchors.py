"""vision.multibox_prior (SSD anchor boxes) and vision.yolo_reorg (Darknet's reorg), as TVM v0.19 had them.

multibox_prior: for every pixel (i, j) of the (H, W) feature map, centred at
((j + offset_w) * step_w, (i + offset_h) * step_h) (steps <= 0 mean 1 / W and 1 / H), one box
per size (half extents size * H / W / 2 and size / 2), then one per further ratio r with sizes[0]
(half extents scaled by sqrt(r) and 1 / sqrt(r)); rows are [x1, y1, x2, y2], float32 arithmetic
as TVM's hybrid kernel, clipped to [0, 1] when clip is set. yolo_reorg: TVM's reorg_python, a
gather that reads the input as (batch, C / stride^2, H * stride, W * stride) rows.
"""

from __future__ import annotations

import numpy as np

from ....ty import TensorType
from ...common import fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ..nn._common import NNOpDef, to_bool, to_floats, to_int
from ._common import tensor_of_rank

# ---------------------------------------------------------------- multibox_prior


def _multibox_prior_rel(arg_types, attrs):
    name = "vision.multibox_prior"
    data = tensor_of_rank(arg_types[0], 4, name, "data")
    if not attrs.sizes or not attrs.ratios:
        raise RelationError(f"{name}: sizes and ratios must not be empty")
    for what in ("steps", "offsets"):
        if len(getattr(attrs, what)) != 2:
            raise RelationError(f"{name}: {what} must be 2 values (h, w), got {list(getattr(attrs, what))}")
    height, width = data.shape[2], data.shape[3]
    if not (isinstance(height, int) and isinstance(width, int)):
        raise RelationError(f"{name}: the feature map size must be static, got {fmt_type(data)}")
    return TensorType((1, height * width * (len(attrs.sizes) + len(attrs.ratios) - 1), 4), data.dtype)


def half_extents(attrs, height: int, width: int):
    """Per box kind k: (half width, half height) in float32, TVM's operation order."""
    f32 = np.float32
    out = []
    for size in attrs.sizes:
        out.append((f32(size) * f32(height) / f32(width) / f32(2), f32(size) / f32(2)))
    first = f32(attrs.sizes[0])
    for ratio in attrs.ratios[1:]:
        root = np.sqrt(f32(ratio))
        out.append((first * f32(height) / f32(width) * root / f32(2), first / root / f32(2)))
    return out


def steps_of(attrs, height: int, width: int):
    f32 = np.float32
    step_h = f32(attrs.steps[0]) if attrs.steps[0] > 0 else f32(1) / f32(height)
    step_w = f32(attrs.steps[1]) if attrs.steps[1] > 0 else f32(1) / f32(width)
    return step_h, step_w


def _multibox_prior_impl(args, attrs, out_type):
    _, _, height, width = np.asarray(args[0]).shape
    f32 = np.float32
    step_h, step_w = steps_of(attrs, height, width)
    centre_h = (np.arange(height, dtype=f32) + f32(attrs.offsets[0])) * step_h
    centre_w = (np.arange(width, dtype=f32) + f32(attrs.offsets[1])) * step_w
    halves = np.array(half_extents(attrs, height, width), dtype=f32)  # (kinds, 2)
    cy = centre_h[:, None, None]
    cx = centre_w[None, :, None]
    hw, hh = halves[None, None, :, 0], halves[None, None, :, 1]
    shape = (height, width, len(halves))
    boxes = np.stack([np.broadcast_to(v, shape) for v in (cx - hw, cy - hh, cx + hw, cy + hh)], axis=-1)
    if attrs.clip:
        boxes = np.clip(boxes, f32(0), f32(1))
    return boxes.reshape(1, -1, 4).astype(out_type.dtype)


def _multibox_prior_te(inputs, attrs, out_type):
    from tvm import te, tirx

    (data,) = inputs
    height, width = int(data.shape[2]), int(data.shape[3])
    halves = half_extents(attrs, height, width)
    kinds = len(halves)
    step_h, step_w = steps_of(attrs, height, width)
    f32 = lambda v: tirx.const(float(v), "float32")  # noqa: E731

    def pick(k, values):
        chosen = f32(values[-1])
        for index in range(len(values) - 2, -1, -1):
            chosen = tirx.Select(k == index, f32(values[index]), chosen)
        return chosen

    def element(_, box, coordinate):
        k = box % kinds
        j = (box // kinds) % width
        i = box // (kinds * width)
        cy = (i.astype("float32") + f32(np.float32(attrs.offsets[0]))) * f32(step_h)
        cx = (j.astype("float32") + f32(np.float32(attrs.offsets[1]))) * f32(step_w)
        hw, hh = pick(k, [h[0] for h in halves]), pick(k, [h[1] for h in halves])
        value = tirx.Select(
            coordinate == 0,
            cx - hw,
            tirx.Select(coordinate == 1, cy - hh, tirx.Select(coordinate == 2, cx + hw, cy + hh)),
        )
        if attrs.clip:
            value = tirx.max(tirx.min(value, f32(1)), f32(0))
        return value.astype(str(out_type.dtype))

    return te.compute((1, height * width * kinds, 4), element, name="T_multibox_prior", tag="injective")


register(
    NNOpDef(
        "vision.multibox_prior",
        1,
        _multibox_prior_rel,
        OpPattern.OPAQUE,
        _multibox_prior_impl,
        te_impl=_multibox_prior_te,
        attrs=(
            AttrField("sizes", (1.0,), to_floats, "box sizes relative to the feature map height"),
            AttrField("ratios", (1.0,), to_floats, "aspect ratios (width / height)"),
            AttrField("steps", (-1.0, -1.0), to_floats, "(h, w) distance between centres; <= 0: 1 / extent"),
            AttrField("offsets", (0.5, 0.5), to_floats, "(h, w) centre offset within a pixel"),
            AttrField("clip", False, to_bool, "clip the boxes to [0, 1]"),
        ),
        extras={"support_level": 5},
        description="SSD prior (anchor) boxes for every pixel of a feature map.",
    )
)

# ---------------------------------------------------------------- yolo_reorg


def _yolo_reorg_rel(arg_types, attrs):
    name = "vision.yolo_reorg"
    data = tensor_of_rank(arg_types[0], 4, name, "data")
    stride = attrs.stride
    if stride < 1:
        raise RelationError(f"{name}: stride must be positive, got {stride}")
    batch, channels, height, width = data.shape
    if not all(isinstance(d, int) for d in data.shape):
        raise RelationError(f"{name}: the input shape must be static, got {fmt_type(data)}")
    if channels % (stride * stride) or height % stride or width % stride:
        raise RelationError(
            f"{name}: stride {stride} must divide the height and width and stride^2 the channels of {fmt_type(data)}"
        )
    return TensorType((batch, channels * stride * stride, height // stride, width // stride), data.dtype)


def _reorg_source(b, k, j, i, shape, stride: int, ops):
    """The flat input index the element at input-shaped position (b, k, j, i) reads."""
    _, channels, height, width = shape
    groups = channels // (stride * stride)
    c2, offset = ops["mod"](k, groups), ops["div"](k, groups)
    w2 = i * stride + ops["mod"](offset, stride)
    h2 = j * stride + ops["div"](offset, stride)
    return w2 + width * stride * (h2 + height * stride * (c2 + groups * b))


def _yolo_reorg_impl(args, attrs, out_type):
    data = np.asarray(args[0])
    b, k, j, i = np.indices(data.shape)
    source = _reorg_source(b, k, j, i, data.shape, attrs.stride, {"mod": np.mod, "div": np.floor_divide})
    return data.reshape(-1)[source.reshape(-1)].reshape(out_type.shape)


def _yolo_reorg_te(inputs, attrs, out_type):
    from tvm import te, tirx

    (data,) = inputs
    shape = [int(d) for d in data.shape]
    _, channels, height, width = shape
    out_shape = [int(d) for d in out_type.shape]
    ops = {"mod": tirx.floormod, "div": tirx.floordiv}

    def element(ob, oc, oy, ox):
        flat = ((ob * out_shape[1] + oc) * out_shape[2] + oy) * out_shape[3] + ox
        # the position the element has in the input-shaped intermediate of TVM's reference
        i = tirx.floormod(flat, width)
        j = tirx.floormod(tirx.floordiv(flat, width), height)
        k = tirx.floormod(tirx.floordiv(flat, width * height), channels)
        b = tirx.floordiv(flat, width * height * channels)
        source = _reorg_source(b, k, j, i, shape, attrs.stride, ops)
        return data[
            tirx.floordiv(source, channels * height * width),
            tirx.floormod(tirx.floordiv(source, height * width), channels),
            tirx.floormod(tirx.floordiv(source, width), height),
            tirx.floormod(source, width),
        ]

    return te.compute(out_shape, element, name="T_yolo_reorg", tag="injective")


register(
    NNOpDef(
        "vision.yolo_reorg",
        1,
        _yolo_reorg_rel,
        OpPattern.INJECTIVE,
        _yolo_reorg_impl,
        te_impl=_yolo_reorg_te,
        attrs=(AttrField("stride", convert=to_int, doc="the reorganisation stride"),),
        extras={"support_level": 5},
        description="Darknet's reorg layer: move stride x stride blocks of pixels into channels.",
    )
)
