"""ResNet v2 test network (TVM's relay.testing.resnet): pre-activation residual units, 18 to 269 layers.

He et al., "Identity Mappings in Deep Residual Networks". Images up to 28 pixels high get the CIFAR variant
(3 stages, depth 6n+2 basic or 9n+2 bottleneck); larger ones the ImageNet variant (4 stages). Parameter names
(`stage2_unit1_conv1_weight`, `bn_data_gamma`, `fc1_bias`…) match TVM's so params dicts are interchangeable.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload

__all__ = ["residual_unit", "resnet", "stage_plan", "get_net", "get_workload"]

# ImageNet depths: residual units per stage.
_IMAGENET_UNITS = {
    18: [2, 2, 2, 2],
    34: [3, 4, 6, 3],
    50: [3, 4, 6, 3],
    101: [3, 4, 23, 3],
    152: [3, 8, 36, 3],
    200: [3, 24, 36, 3],
    269: [3, 30, 48, 8],
}


class ResNetConfigError(TranspileError):
    """A ResNet depth or layout the network has no definition for."""


def _check_layout(layout):
    if layout not in ("NCHW", "NHWC"):
        raise ResNetConfigError(f"resnet: layout must be NCHW or NHWC, not {layout!r}")


def _bn_relu(data, name, bn_axis):
    from .. import nn

    return nn.relu(layers.batch_norm_infer(data=data, epsilon=2e-5, axis=bn_axis, name=name))


def residual_unit(
    data, num_filter, stride, dim_match, name, bottle_neck=True, data_layout="NCHW", kernel_layout="IOHW"
):
    """One pre-activation unit: (bn, relu, conv) ×2 (basic) or ×3 (bottleneck, 1×1 → 3×3 → 1×1 at ¼ width),
    plus the input itself or, where the shape changes (`dim_match` False), a strided 1×1 projection `<name>_sc`."""
    from .. import add

    bn_axis = data_layout.index("C")

    def conv(x, channels, kernel, strides, suffix, **padding):
        return layers.conv2d(
            data=x,
            channels=channels,
            kernel_size=kernel,
            strides=strides,
            **padding,
            name=f"{name}_{suffix}",
            data_layout=data_layout,
            kernel_layout=kernel_layout,
        )

    act1 = _bn_relu(data, name + "_bn1", bn_axis)
    if bottle_neck:
        narrow = int(num_filter * 0.25)
        body = conv(act1, narrow, (1, 1), stride, "conv1", padding=(0, 0))
        body = conv(_bn_relu(body, name + "_bn2", bn_axis), narrow, (3, 3), (1, 1), "conv2", padding=(1, 1))
        body = conv(_bn_relu(body, name + "_bn3", bn_axis), num_filter, (1, 1), (1, 1), "conv3", padding=(0, 0))
    else:
        body = conv(act1, num_filter, (3, 3), stride, "conv1", padding=(1, 1))
        body = conv(_bn_relu(body, name + "_bn2", bn_axis), num_filter, (3, 3), (1, 1), "conv2", padding=(1, 1))
    # the projection keeps the builder's default padding, as TVM's network did (explicit zeros print differently)
    shortcut = data if dim_match else conv(act1, num_filter, (1, 1), stride, "sc")
    return add(body, shortcut)


def resnet(units, num_stages, filter_list, num_classes, data_shape, bottle_neck=True, layout="NCHW", dtype="float32"):
    """The whole network as a Function: input bn, stem conv, `num_stages` stages of `units[i]` residual units
    with `filter_list[i+1]` channels (stride 2 entering every stage but the first), bn-relu, global average pool,
    dense, softmax."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    _check_layout(layout)
    if len(units) != num_stages:
        raise ResNetConfigError(f"resnet: {len(units)} unit counts given for {num_stages} stages")
    kernel_layout = "OIHW" if layout == "NCHW" else "HWIO"
    bn_axis = layout.index("C")
    height = data_shape[layout.index("H")]

    data = var("data", shape=data_shape, dtype=dtype)
    body = layers.batch_norm_infer(data=data, epsilon=2e-5, axis=bn_axis, scale=False, name="bn_data")
    stem = dict(channels=filter_list[0], name="conv0", data_layout=layout, kernel_layout=kernel_layout)
    if height <= 32:  # small images (CIFAR): a 3×3 stem keeps the resolution
        body = layers.conv2d(data=body, kernel_size=(3, 3), strides=(1, 1), padding=(1, 1), **stem)
    else:  # ImageNet-sized: 7×7/2 stem, bn-relu, 3×3/2 max pool
        body = layers.conv2d(data=body, kernel_size=(7, 7), strides=(2, 2), padding=(3, 3), **stem)
        body = _bn_relu(body, "bn0", bn_axis)
        body = nn.max_pool2d(data=body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=layout)

    for stage in range(num_stages):
        stride = (1, 1) if stage == 0 else (2, 2)
        for unit in range(units[stage]):
            body = residual_unit(
                body,
                filter_list[stage + 1],
                stride if unit == 0 else (1, 1),
                unit != 0,
                name=f"stage{stage + 1}_unit{unit + 1}",
                bottle_neck=bottle_neck,
                data_layout=layout,
                kernel_layout=kernel_layout,
            )
    body = _bn_relu(body, "bn1", bn_axis)
    pooled = nn.global_avg_pool2d(data=body, layout=layout)
    logits = layers.dense_add_bias(data=nn.batch_flatten(data=pooled), units=num_classes, name="fc1")
    net = nn.softmax(data=logits)
    return Function(free_vars(net), net)


def stage_plan(num_layers, height):
    """(units per stage, stage count, filter list, bottleneck?) of the ResNet of `num_layers` for an input height
    (shared with resnet_3d)."""
    if height <= 28:
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            per_stage, filters, bottle_neck = (num_layers - 2) // 9, [16, 64, 128, 256], True
        elif (num_layers - 2) % 6 == 0 and num_layers < 164:
            per_stage, filters, bottle_neck = (num_layers - 2) // 6, [16, 16, 32, 64], False
        else:
            raise ResNetConfigError(
                f"resnet: no CIFAR-size (height {height} ≤ 28) network of {num_layers} layers; "
                "use 6n+2 layers below 164 or 9n+2 from 164"
            )
        return [per_stage] * 3, 3, filters, bottle_neck
    if num_layers not in _IMAGENET_UNITS:
        raise ResNetConfigError(f"resnet: no network of {num_layers} layers; choose one of {sorted(_IMAGENET_UNITS)}")
    if num_layers >= 50:
        return _IMAGENET_UNITS[num_layers], 4, [64, 256, 512, 1024, 2048], True
    return _IMAGENET_UNITS[num_layers], 4, [64, 64, 128, 256, 512], False


def get_net(
    batch_size, num_classes, num_layers=50, image_shape=(3, 224, 224), layout="NCHW", dtype="float32", **kwargs
):
    """The ResNet of `num_layers` for images of `image_shape` (CHW, or HWC with layout NHWC) as a Function."""
    _check_layout(layout)
    image_shape = tuple(image_shape)
    if len(image_shape) != 3:
        raise ResNetConfigError(f"resnet: image_shape must have 3 dimensions, got {image_shape}")
    height = image_shape[0] if layout == "NHWC" else image_shape[1]
    units, num_stages, filter_list, bottle_neck = stage_plan(num_layers, height)
    return resnet(
        units=units,
        num_stages=num_stages,
        filter_list=filter_list,
        num_classes=num_classes,
        data_shape=(batch_size,) + image_shape,
        bottle_neck=bottle_neck,
        layout=layout,
        dtype=dtype,
    )


def get_workload(
    batch_size=1, num_classes=1000, num_layers=18, image_shape=(3, 224, 224), layout="NCHW", dtype="float32", **kwargs
):
    """(module, params) of the ResNet, parameters initialized by Xavier (seed 0)."""
    net = get_net(batch_size, num_classes, num_layers, image_shape, layout, dtype, **kwargs)
    return create_workload(net)
