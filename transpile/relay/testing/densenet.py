"""DenseNet test network (TVM's relay.testing.densenet): densely connected blocks, sizes 121/161/169/201.

Huang et al., "Densely Connected Convolutional Networks". Each dense layer is bn-relu-1×1 conv (bn_size ×
growth channels) then bn-relu-3×3 conv (growth channels); a block concatenates its layers' outputs; transitions
halve the channels (1×1 conv) and the resolution (2×2 average pool). NCHW, 224×224 images for the final 7×7 pool.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload

__all__ = ["get_workload"]

# densenet size → (initial features, growth rate, layers per block)
_SPECS = {
    121: (64, 32, [6, 12, 24, 16]),
    161: (96, 48, [6, 12, 36, 24]),
    169: (69, 32, [6, 12, 32, 32]),
    201: (64, 32, [6, 12, 48, 32]),
}


def _bn_relu_conv(data, bn_name, conv_name, channels, kernel_size, **padding):
    # padding only where TVM's network gave one: the builder's default prints differently from explicit zeros
    from .. import nn

    activated = nn.relu(layers.batch_norm_infer(data, name=bn_name))
    return layers.conv2d(activated, channels=channels, kernel_size=kernel_size, name=conv_name, **padding)


def _make_dense_layer(data, growth_rate, bn_size, index):
    bottleneck = _bn_relu_conv(data, f"batch_1_{index}", f"conv2d_1_{index}", bn_size * growth_rate, (1, 1))
    return _bn_relu_conv(bottleneck, f"batch_2_{index}", f"conv2d_2_{index}", growth_rate, (3, 3), padding=(1, 1))


def _make_dense_block(data, num_layers, bn_size, growth_rate, index):
    # as in TVM's network, each layer feeds only the next and the block concatenates the layers' outputs
    from .. import concatenate

    outputs, layer_out = [], data
    for position in range(num_layers):
        layer_out = _make_dense_layer(layer_out, growth_rate, bn_size, f"{index}_{position}")
        outputs.append(layer_out)
    return concatenate(outputs, 1)


def _make_transition(data, num_output_features, index):
    from .. import nn

    conv = _bn_relu_conv(data, f"batch_t_{index}", f"conv_t_{index}", num_output_features, (1, 1))
    return nn.avg_pool2d(conv, pool_size=(2, 2), strides=(2, 2))


def _make_dense_net(num_init_features, growth_rate, block_config, data_shape, data_dtype, bn_size=4, classes=1000):
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    data = var("data", shape=data_shape, dtype=data_dtype)
    conv1 = layers.conv2d(
        data, channels=num_init_features, kernel_size=(7, 7), strides=(2, 2), padding=(3, 3), name="conv1"
    )
    body = nn.relu(layers.batch_norm_infer(conv1, name="batch1"))
    body = nn.max_pool2d(body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    num_features = num_init_features
    for index, num_layers in enumerate(block_config):
        body = _make_dense_block(body, num_layers, bn_size, growth_rate, index)
        num_features += num_layers * growth_rate
        if index != len(block_config) - 1:
            num_features //= 2
            body = _make_transition(body, num_features, index)
    body = nn.relu(layers.batch_norm_infer(body, name="batch2"))
    flat = nn.batch_flatten(nn.avg_pool2d(body, pool_size=(7, 7)))
    logits = layers.dense_add_bias(flat, units=classes, name="dense")
    return Function(free_vars(logits), logits)


def get_workload(densenet_size=121, classes=1000, batch_size=4, image_shape=(3, 224, 224), dtype="float32"):
    """(module, params) of DenseNet-`densenet_size`, parameters initialized by Xavier (seed 0)."""
    if densenet_size not in _SPECS:
        raise TranspileError(f"densenet: no network of size {densenet_size}; choose one of {sorted(_SPECS)}")
    num_init_features, growth_rate, block_config = _SPECS[densenet_size]
    data_shape = (batch_size,) + tuple(image_shape)
    net = _make_dense_net(num_init_features, growth_rate, block_config, data_shape, dtype, 4, classes)
    return create_workload(net)
