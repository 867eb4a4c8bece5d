"""A multilayer perceptron test network (TVM's relay.testing.mlp): flatten, 3 dense layers, softmax."""

from __future__ import annotations

from .init import create_workload

__all__ = ["get_net", "get_workload"]


def get_net(batch_size, num_classes=10, image_shape=(1, 28, 28), dtype="float32"):
    """The network as a relay.Function of `data` and the layer parameters (their types left to inference)."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    data = var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    hidden = nn.batch_flatten(data)
    for index, units in enumerate((128, 64, num_classes), start=1):
        hidden = nn.dense(hidden, var(f"fc{index}_weight"), units=units)
        hidden = nn.bias_add(hidden, var(f"fc{index}_bias"), axis=-1)
        if index < 3:
            hidden = nn.relu(hidden)
    output = nn.softmax(hidden)
    return Function(free_vars(output), output)


def get_workload(batch_size, num_classes=10, image_shape=(1, 28, 28), dtype="float32"):
    """(module, params) of the network, parameters initialized by Xavier (seed 0)."""
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype))
