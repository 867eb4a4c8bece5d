"""MobileNet v1 test network (TVM's relay.testing.mobilenet): a conv stem, then depthwise-separable blocks.

Howard et al., "MobileNets: Efficient Convolutional Neural Networks for Mobile Vision Applications". `alpha`
scales every width; `is_shallow` replaces the five 512-channel blocks by a strided pair (the shallow variant).
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload

__all__ = ["conv_block", "separable_conv_block", "mobile_net", "get_workload"]


class MobileNetConfigError(TranspileError):
    """A MobileNet layout the network has no definition for."""


def _check_layout(layout):
    if layout not in ("NCHW", "NHWC"):
        raise MobileNetConfigError(f"mobilenet: layout must be NCHW or NHWC, not {layout!r}")


def conv_block(data, name, channels, kernel_size=(3, 3), strides=(1, 1), padding=(1, 1), epsilon=1e-5, layout="NCHW"):
    """Convolution `<name>_conv`, batch norm `<name>_bn` over the channel axis, relu."""
    from .. import nn

    _check_layout(layout)
    conv = layers.conv2d(
        data=data,
        channels=channels,
        kernel_size=kernel_size,
        strides=strides,
        padding=padding,
        data_layout=layout,
        kernel_layout=layers.conv_kernel_layout(layout),
        name=name + "_conv",
    )
    # TVM normalized axis 1 whatever the layout; the channel axis is what NHWC needs
    bn_axis = layout.index("C")
    return nn.relu(layers.batch_norm_infer(data=conv, epsilon=epsilon, axis=bn_axis, name=name + "_bn"))


def separable_conv_block(
    data,
    name,
    depthwise_channels,
    pointwise_channels,
    kernel_size=(3, 3),
    downsample=False,
    padding=(1, 1),
    epsilon=1e-5,
    layout="NCHW",
    dtype="float32",
):
    """Depthwise 3×3 convolution (stride 2 when `downsample`), bn, relu; pointwise 1×1 convolution, bn, relu."""
    from .. import nn
    from ..expr import var

    _check_layout(layout)
    kernel_size = tuple(kernel_size)
    strides = (2, 2) if downsample else (1, 1)
    bn_axis = layout.index("C")
    # one input channel per group: the weight's I axis is 1
    weight_shape = (depthwise_channels, 1) + kernel_size if layout == "NCHW" else kernel_size + (depthwise_channels, 1)
    depthwise = layers.conv2d(
        data=data,
        weight=var(name + "_weight", shape=weight_shape, dtype=dtype),
        channels=depthwise_channels,
        groups=depthwise_channels,
        kernel_size=kernel_size,
        strides=strides,
        padding=padding,
        data_layout=layout,
        kernel_layout=layers.conv_kernel_layout(layout, True),
        name=name + "_depthwise_conv1",
    )
    act1 = nn.relu(layers.batch_norm_infer(data=depthwise, epsilon=epsilon, axis=bn_axis, name=name + "_bn1"))
    pointwise = layers.conv2d(
        data=act1,
        channels=pointwise_channels,
        kernel_size=(1, 1),
        strides=(1, 1),
        padding=(0, 0),
        data_layout=layout,
        kernel_layout=layers.conv_kernel_layout(layout),
        name=name + "_conv2",
    )
    return nn.relu(layers.batch_norm_infer(data=pointwise, epsilon=epsilon, axis=bn_axis, name=name + "_bn2"))


def mobile_net(
    num_classes=1000, data_shape=(1, 3, 224, 224), dtype="float32", alpha=1.0, is_shallow=False, layout="NCHW"
):
    """The whole network as a Function: stem, 13 (shallow: 8) separable blocks, global pool, dense, softmax."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    def width(channels):
        return int(channels * alpha)

    data = var("data", shape=data_shape, dtype=dtype)
    body = conv_block(data, "conv_block_1", width(32), strides=(2, 2), layout=layout)
    # (input width, output width, downsample) of each separable block
    blocks = [
        (32, 64, False),
        (64, 128, True),
        (128, 128, False),
        (128, 256, True),
        (256, 256, False),
        (256, 512, True),
    ]
    if is_shallow:
        blocks += [(512, 1024, True), (1024, 1024, True)]
    else:
        blocks += [(512, 512, False)] * 5 + [(512, 1024, True), (1024, 1024, False)]
    for index, (depthwise, pointwise, downsample) in enumerate(blocks, start=1):
        body = separable_conv_block(
            body,
            f"separable_conv_block_{index}",
            width(depthwise),
            width(pointwise),
            downsample=downsample,
            layout=layout,
            dtype=dtype,
        )
    pooled = nn.batch_flatten(data=nn.global_avg_pool2d(data=body, layout=layout))
    logits = nn.bias_add(nn.dense(pooled, var("fc_weight"), units=num_classes), var("fc_bias"))
    net = nn.softmax(data=logits)
    return Function(free_vars(net), net)


def get_workload(batch_size=1, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", layout="NCHW"):
    """(module, params) of MobileNet (alpha 1, full depth), parameters initialized by Xavier (seed 0)."""
    data_shape = (batch_size,) + tuple(image_shape)
    net = mobile_net(
        num_classes=num_classes, data_shape=data_shape, dtype=dtype, alpha=1.0, is_shallow=False, layout=layout
    )
    return create_workload(net)
