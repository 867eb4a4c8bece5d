"""A small synthetic test network (TVM's relay.testing.synthetic): dense, conv2d, softmax, batch norm mixed.

Two rounds of: a dense on the rows of the input (reshaped to (-1, W)) and a 3×3 same-padding convolution with
softmax, added together; between the rounds a bias_add and a batch norm. Weights are Constant-initialized.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import Constant, create_workload

__all__ = ["get_net", "get_workload"]


def _dense_and_conv(data, like, input_shape, wtype, dense_name, conv_name):
    from .. import add, nn, reshape, reshape_like
    from ..expr import var

    width, channels = input_shape[3], input_shape[1]
    rows = reshape(data, [-1, width])
    dense = nn.relu(nn.dense(rows, var(dense_name, shape=[width, width], dtype=wtype)))
    conv_weight = var(conv_name, shape=[channels, channels, 3, 3], dtype=wtype)
    conv = nn.softmax(nn.conv2d(data, conv_weight, padding=1, kernel_size=3))
    return add(reshape_like(dense, like), conv)


def get_net(input_shape=(1, 3, 24, 12), dtype="float32", wtype=None):
    """The network for an NCHW input of `input_shape` as a Function; weights of dtype `wtype` (default `dtype`)."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    input_shape = tuple(input_shape)
    if len(input_shape) != 4:
        raise TranspileError(f"synthetic.get_net: input_shape must be NCHW (4 dimensions), got {input_shape}")
    wtype = dtype if wtype is None else wtype
    data = var("data", shape=input_shape, dtype=dtype)
    # both rounds shape their dense output like the network's input (TVM's structure)
    first = _dense_and_conv(data, data, input_shape, wtype, "dense_weight", "conv_weight")
    biased = layers.batch_norm_infer(nn.bias_add(first, var("bias", dtype=wtype)), name="batch_norm")
    second = _dense_and_conv(biased, data, input_shape, wtype, "dense2_weight", "conv2_weight")
    return Function(free_vars(second), second)


def get_workload(input_shape=(1, 3, 24, 12), dtype="float32", wtype=None):
    """(module, params) of the network, every weight Constant-initialized (1 / its size)."""
    return create_workload(get_net(input_shape=input_shape, dtype=dtype, wtype=wtype), initializer=Constant())
