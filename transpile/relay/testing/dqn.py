"""Deep Q-network test network (TVM's relay.testing.dqn): the Atari DQN of Mnih et al. (Nature 2015).

Three convolutions (8×8/4 → 32, 4×4/2 → 64, 3×3/1 → 64, each with bias and relu), a 512-unit dense layer with
relu, and a dense layer giving one Q value per action.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload

__all__ = ["get_net", "get_workload"]

# (name, kernel, stride, channels) of the convolutions
_CONVOLUTIONS = (("conv1", 8, 4, 32), ("conv2", 4, 2, 64), ("conv3", 3, 1, 64))


def get_net(batch_size, num_actions=18, image_shape=(4, 84, 84), dtype="float32", layout="NCHW"):
    """The network for a batch of stacked frames of `image_shape` (CHW, or HWC for NHWC) as a Function."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    if layout not in ("NCHW", "NHWC"):
        raise TranspileError(f"dqn: layout must be NCHW or NHWC, not {layout!r}")
    bias_axis = layout.index("C")
    body = var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    for name, kernel, stride, channels in _CONVOLUTIONS:
        body = layers.conv2d(
            body,
            kernel_size=(kernel, kernel),
            strides=(stride, stride),
            padding=(0, 0),
            channels=channels,
            name=name,
            data_layout=layout,
            kernel_layout=layers.conv_kernel_layout(layout),
        )
        body = nn.relu(nn.bias_add(body, var(name + "_bias"), bias_axis))
    hidden = nn.relu(layers.dense_add_bias(nn.batch_flatten(body), units=512, name="dense1"))
    q_values = layers.dense_add_bias(hidden, units=num_actions, name="dense2")
    return Function(free_vars(q_values), q_values)


def get_workload(batch_size, num_actions=18, image_shape=(4, 84, 84), dtype="float32", layout="NCHW"):
    """(module, params) of the DQN, parameters initialized by Xavier (seed 0)."""
    return create_workload(get_net(batch_size, num_actions, image_shape, dtype, layout))
