"""Layer helpers for the test networks (TVM's relay.testing.layers): operators that create their own parameters.

Each helper names its parameters `<name>_<role>` (e.g. `conv1_weight`, `bn_data_gamma`) so `create_workload`
initializes them by suffix and the params dicts carry the keys TVM's networks had.
"""

from __future__ import annotations

from ...errors import TranspileError

__all__ = [
    "batch_norm_infer",
    "conv2d",
    "conv3d",
    "conv2d_transpose",
    "dense_add_bias",
    "conv_kernel_layout",
]


class LayerError(TranspileError):
    """A test-network layer was asked for something it cannot build."""


def _layer_name(kwargs, layer):
    name = kwargs.pop("name", None)
    if not isinstance(name, str) or not name:
        raise LayerError(f"layers.{layer} needs name=<str>: its parameters are named after it")
    return name


def _param(given, name):
    from ..expr import var

    return var(name) if given is None else given


def batch_norm_infer(data, gamma=None, beta=None, moving_mean=None, moving_var=None, **kwargs):
    """The normalized output of nn.batch_norm (inference), creating `<name>_gamma/_beta/_moving_mean/_moving_var`."""
    from .. import nn

    name = _layer_name(kwargs, "batch_norm_infer")
    normalized = nn.batch_norm(
        data,
        _param(gamma, name + "_gamma"),
        _param(beta, name + "_beta"),
        _param(moving_mean, name + "_moving_mean"),
        _param(moving_var, name + "_moving_var"),
        **kwargs,
    )
    return normalized[0]


def conv2d(data, weight=None, **kwargs):
    """nn.conv2d with a `<name>_weight` parameter unless `weight` is given."""
    from .. import nn

    name = _layer_name(kwargs, "conv2d")
    return nn.conv2d(data, _param(weight, name + "_weight"), **kwargs)


def conv3d(data, weight=None, **kwargs):
    """nn.conv3d with a `<name>_weight` parameter unless `weight` is given."""
    from .. import nn

    name = _layer_name(kwargs, "conv3d")
    return nn.conv3d(data, _param(weight, name + "_weight"), **kwargs)


def conv2d_transpose(data, weight=None, **kwargs):
    """nn.conv2d_transpose with a `<name>_weight` parameter unless `weight` is given."""
    from .. import nn

    name = _layer_name(kwargs, "conv2d_transpose")
    return nn.conv2d_transpose(data, _param(weight, name + "_weight"), **kwargs)


def dense_add_bias(data, weight=None, bias=None, units=None, **kwargs):
    """nn.dense then nn.bias_add on the last axis, with `<name>_weight` and `<name>_bias` parameters."""
    from .. import nn

    name = _layer_name(kwargs, "dense_add_bias")
    dense = nn.dense(data, _param(weight, name + "_weight"), units, **kwargs)
    return nn.bias_add(dense, _param(bias, name + "_bias"), axis=-1)


def conv_kernel_layout(data_layout, is_depthwise=False):
    """The kernel layout TOPI's convolutions pair with `data_layout` (NCHW → OIHW; NHWC → HWIO, depthwise HWOI)."""
    layouts = {"NCHW": "OIHW", "NHWC": "HWOI" if is_depthwise else "HWIO"}
    if data_layout not in layouts:
        raise LayerError(f"conv_kernel_layout: unknown data layout {data_layout!r}; expected NCHW or NHWC")
    return layouts[data_layout]
