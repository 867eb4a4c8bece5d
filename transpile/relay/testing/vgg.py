"""VGG test network (TVM's relay.testing.vgg): 11, 13, 16 or 19 layers, optionally with batch norm.

Simonyan & Zisserman, "Very Deep Convolutional Networks for Large-Scale Image Recognition". Five stages of
3×3 convolutions (bias, [batch norm], relu) each ending in a 2×2 max pool, then fc6/fc7 (4096, relu, dropout)
and fc8, softmax. NCHW.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers as wrapper
from .init import create_workload

__all__ = ["get_feature", "get_classifier", "get_net", "get_workload"]

# depth → (convolutions per stage, channels per stage)
_SPECS = {
    11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
    13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
    16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
    19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512]),
}


def get_feature(internal_layer, layers, filters, batch_norm=False):
    """The convolutional stages: `layers[i]` convolutions `conv<i+1>_<j+1>` of `filters[i]` channels, then a pool."""
    from .. import nn
    from ..expr import var

    for stage, (count, channels) in enumerate(zip(layers, filters), start=1):
        for position in range(1, count + 1):
            name = f"conv{stage}_{position}"
            internal_layer = wrapper.conv2d(
                data=internal_layer, kernel_size=(3, 3), padding=(1, 1), channels=channels, name=name
            )
            internal_layer = nn.bias_add(internal_layer, var(f"{name}_bias"))
            if batch_norm:
                internal_layer = wrapper.batch_norm_infer(data=internal_layer, name=f"bn{stage}_{position}")
            internal_layer = nn.relu(data=internal_layer)
        internal_layer = nn.max_pool2d(data=internal_layer, pool_size=(2, 2), strides=(2, 2))
    return internal_layer


def get_classifier(input_data, num_classes):
    """fc6 and fc7 (4096 units, relu, dropout 0.5), then fc8 to `num_classes` logits."""
    from .. import nn

    hidden = nn.batch_flatten(data=input_data)
    for name in ("fc6", "fc7"):
        hidden = nn.relu(data=wrapper.dense_add_bias(data=hidden, units=4096, name=name))
        hidden = nn.dropout(data=hidden, rate=0.5)
    return wrapper.dense_add_bias(data=hidden, units=num_classes, name="fc8")


def get_net(batch_size, image_shape, num_classes, dtype, num_layers=11, batch_norm=False):
    """VGG-`num_layers` as a Function of an NCHW `data` batch."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    if num_layers not in _SPECS:
        raise TranspileError(f"vgg: invalid num_layers {num_layers}; choices are 11, 13, 16, 19")
    counts, filters = _SPECS[num_layers]
    data = var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    net = nn.softmax(data=get_classifier(get_feature(data, counts, filters, batch_norm), num_classes))
    return Function(free_vars(net), net)


def get_workload(
    batch_size, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", num_layers=11, batch_norm=False
):
    """(module, params) of VGG, parameters initialized by Xavier (seed 0)."""
    return create_workload(get_net(batch_size, image_shape, num_classes, dtype, num_layers, batch_norm))
