"""SqueezeNet test network (TVM's relay.testing.squeezenet), versions 1.0 and 1.1, NCHW.

Iandola et al., "SqueezeNet: AlexNet-level accuracy with 50x fewer parameters". Fire modules squeeze with 1×1
convolutions and expand with concatenated 1×1 and 3×3 ones; 1.1 has a lighter stem and pools earlier.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]

# version → (stem channels, stem kernel, stem padding, the stages after the stem: fire (squeeze, expand) or "pool")
_FIRE_16, _FIRE_32, _FIRE_48, _FIRE_64 = (16, 64), (32, 128), (48, 192), (64, 256)
_VERSIONS = {
    "1.0": (96, 7, 3, [_FIRE_16, _FIRE_16, _FIRE_32, "pool", _FIRE_32, _FIRE_48, _FIRE_48, _FIRE_64, "pool", _FIRE_64]),
    "1.1": (64, 3, 1, [_FIRE_16, _FIRE_16, "pool", _FIRE_32, _FIRE_32, "pool", _FIRE_48, _FIRE_48, _FIRE_64, _FIRE_64]),
}


def _conv_bias_relu(data, channels, kernel_size, padding, prefix, strides=(1, 1)):
    from .. import nn
    from ..expr import var

    conv = layers.conv2d(
        data,
        channels=channels,
        kernel_size=(kernel_size, kernel_size),
        strides=strides,
        padding=(padding, padding),
        name=f"{prefix}_conv",
    )
    return nn.relu(nn.bias_add(conv, var(f"{prefix}_conv_bias")))


def _fire(data, squeeze_channels, expand_channels, prefix):
    from .. import concatenate

    squeezed = _conv_bias_relu(data, squeeze_channels, 1, 0, f"{prefix}_input")
    left = _conv_bias_relu(squeezed, expand_channels, 1, 0, f"{prefix}_left")
    right = _conv_bias_relu(squeezed, expand_channels, 3, 1, f"{prefix}_right")
    return concatenate((left, right), axis=1)


def get_net(batch_size, image_shape, num_classes, version, dtype):
    """The network as a Function of an NCHW `data` batch."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    if version not in _VERSIONS:
        raise TranspileError(f"squeezenet: unsupported version {version!r}; 1.0 or 1.1 expected")
    stem_channels, stem_kernel, stem_padding, stages = _VERSIONS[version]
    net = var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    net = layers.conv2d(
        net,
        channels=stem_channels,
        kernel_size=(stem_kernel, stem_kernel),
        strides=(2, 2),
        padding=(stem_padding, stem_padding),
        name="conv1",
    )
    net = nn.relu(nn.bias_add(net, var("conv1_bias")))
    net = nn.max_pool2d(net, pool_size=(3, 3), strides=(2, 2))
    fire_index = 0
    for stage in stages:
        if stage == "pool":
            net = nn.max_pool2d(net, pool_size=(3, 3), strides=(2, 2))
        else:
            fire_index += 1
            net = _fire(net, stage[0], stage[1], f"fire{fire_index}")
    net = nn.dropout(net, rate=0.5)
    net = layers.conv2d(net, channels=num_classes, kernel_size=(1, 1), name="conv_final")
    net = nn.relu(nn.bias_add(net, var("conv_final_bias")))
    net = nn.softmax(nn.batch_flatten(nn.global_avg_pool2d(net)))
    return Function(free_vars(net), net)


def get_workload(batch_size=1, num_classes=1000, version="1.0", image_shape=(3, 224, 224), dtype="float32"):
    """(module, params) of SqueezeNet `version`, parameters initialized by Xavier (seed 0)."""
    return create_workload(get_net(batch_size, image_shape, num_classes, version, dtype))
