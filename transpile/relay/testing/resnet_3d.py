"""3-D ResNet test network (TVM's relay.testing.resnet_3d): the pre-activation ResNet on video clips.

The residual structure and depths of relay.testing.resnet with conv3d: NCDHW (kernel OIDHW) or NDHWC (DHWIO)
clips; small frames (height ≤ 32) get a 3×3×3 stem, larger ones a 3×7×7 stem striding only in space.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload
from .resnet import stage_plan

__all__ = ["residual_unit", "resnet", "get_net", "get_workload"]

_KERNEL_LAYOUTS = {"NCDHW": "OIDHW", "NDHWC": "DHWIO"}


def _check_layout(layout):
    if layout not in _KERNEL_LAYOUTS:
        raise TranspileError(f"resnet_3d: layout must be NCDHW or NDHWC, not {layout!r}")


def _bn_relu(data, name, bn_axis):
    from .. import nn

    return nn.relu(layers.batch_norm_infer(data=data, epsilon=2e-5, axis=bn_axis, name=name))


def residual_unit(
    data, num_filter, stride, dim_match, name, bottle_neck=True, data_layout="NCDHW", kernel_layout="OIDHW"
):
    """One pre-activation unit with 3-D convolutions (see resnet.residual_unit)."""
    from .. import add

    # TVM normalized axis 1 whatever the layout; the channel axis is what NDHWC needs
    bn_axis = data_layout.index("C")

    def conv(x, channels, kernel, strides, suffix, **padding):
        return layers.conv3d(
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
        body = conv(act1, narrow, (1, 1, 1), stride, "conv1", padding=(0, 0, 0))
        body = conv(_bn_relu(body, name + "_bn2", bn_axis), narrow, (3, 3, 3), (1, 1, 1), "conv2", padding=(1, 1, 1))
        body = conv(
            _bn_relu(body, name + "_bn3", bn_axis), num_filter, (1, 1, 1), (1, 1, 1), "conv3", padding=(0, 0, 0)
        )
    else:
        body = conv(act1, num_filter, (3, 3, 3), stride, "conv1", padding=(1, 1, 1))
        body = conv(
            _bn_relu(body, name + "_bn2", bn_axis), num_filter, (3, 3, 3), (1, 1, 1), "conv2", padding=(1, 1, 1)
        )
    # the projection keeps the builder's default padding, as TVM's network did (explicit zeros print differently)
    shortcut = data if dim_match else conv(act1, num_filter, (1, 1, 1), stride, "sc")
    return add(body, shortcut)


def resnet(units, num_stages, filter_list, num_classes, data_shape, bottle_neck=True, layout="NCDHW", dtype="float32"):
    """The whole network as a Function (see resnet.resnet), pooled globally over depth, height and width."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    _check_layout(layout)
    if len(units) != num_stages:
        raise TranspileError(f"resnet_3d: {len(units)} unit counts given for {num_stages} stages")
    kernel_layout = _KERNEL_LAYOUTS[layout]
    bn_axis = layout.index("C")
    height = data_shape[layout.index("H")]

    data = var("data", shape=data_shape, dtype=dtype)
    body = layers.batch_norm_infer(data=data, epsilon=2e-5, axis=bn_axis, scale=False, name="bn_data")
    stem = dict(channels=filter_list[0], name="conv0", data_layout=layout, kernel_layout=kernel_layout)
    if height <= 32:
        body = layers.conv3d(data=body, kernel_size=(3, 3, 3), strides=(1, 1, 1), padding=(1, 1, 1), **stem)
    else:
        body = layers.conv3d(data=body, kernel_size=(3, 7, 7), strides=(1, 2, 2), padding=(1, 3, 3), **stem)
        body = _bn_relu(body, "bn0", bn_axis)

    for stage in range(num_stages):
        stride = (1, 1, 1) if stage == 0 else (2, 2, 2)
        for unit in range(units[stage]):
            body = residual_unit(
                body,
                filter_list[stage + 1],
                stride if unit == 0 else (1, 1, 1),
                unit != 0,
                name=f"stage{stage + 1}_unit{unit + 1}",
                bottle_neck=bottle_neck,
                data_layout=layout,
                kernel_layout=kernel_layout,
            )
    body = _bn_relu(body, "bn1", bn_axis)
    # global average pooling over D, H, W (TVM's global_avg_pool3d is this adaptive pool)
    pooled = nn.adaptive_avg_pool3d(body, output_size=(1, 1, 1), layout=layout)
    logits = layers.dense_add_bias(data=nn.batch_flatten(data=pooled), units=num_classes, name="fc1")
    net = nn.softmax(data=logits)
    return Function(free_vars(net), net)


def get_net(
    batch_size, num_classes, num_layers=50, image_shape=(3, 16, 112, 112), layout="NCDHW", dtype="float32", **kwargs
):
    """The 3-D ResNet of `num_layers` for clips of `image_shape` (CDHW, or DHWC with NDHWC) as a Function."""
    _check_layout(layout)
    image_shape = tuple(image_shape)
    if len(image_shape) != 4:
        raise TranspileError(f"resnet_3d: image_shape must have 4 dimensions, got {image_shape}")
    height = image_shape[layout.index("H") - 1]
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
    batch_size=1,
    num_classes=1000,
    num_layers=18,
    image_shape=(3, 16, 112, 112),
    layout="NCDHW",
    dtype="float32",
    **kwargs,
):
    """(module, params) of the 3-D ResNet, parameters initialized by Xavier (seed 0)."""
    return create_workload(get_net(batch_size, num_classes, num_layers, image_shape, layout, dtype, **kwargs))
