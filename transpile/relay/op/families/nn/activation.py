"""Activations: nn.relu, nn.leaky_relu, nn.prelu, nn.softmax, nn.log_softmax."""

from __future__ import annotations

import numpy as np

from ....ty import TensorType
from ...common import expect_tensor, fmt_type, normalize_axis
from ...registry import AttrField, OpPattern, RelationError, register
from ._common import NNOpDef, to_float, to_int, type_matches, vector_inference
from .te_common import accumulate_dtype, cast


def _identity_rel(op_name):
    def rel(arg_types, attrs):
        return expect_tensor(arg_types[0], op_name, "data")

    return rel


def _softmax_rel(op_name):
    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        normalize_axis(attrs.axis, data.ndim, op_name)
        return data

    return rel


def _prelu_axis(data: TensorType, attrs) -> int:
    return normalize_axis(attrs.axis, data.ndim, "nn.prelu")


def _prelu_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.prelu", "data")
    alpha = expect_tensor(arg_types[1], "nn.prelu", "alpha")
    axis = _prelu_axis(data, attrs)
    expected = TensorType((data.shape[axis],), data.dtype)
    if not type_matches(alpha, expected):
        raise RelationError(
            f"nn.prelu: alpha must be {fmt_type(expected)} (the size of axis {attrs.axis} of data "
            f"{fmt_type(data)}), got {fmt_type(alpha)}"
        )
    return data


def _relu_impl(args, attrs, out_type):
    x = args[0]
    return np.maximum(x, np.zeros((), dtype=x.dtype))


def _leaky_relu_impl(args, attrs, out_type):
    x = args[0]
    return np.where(x > 0, x, x * np.asarray(attrs.alpha, dtype=x.dtype)).astype(x.dtype)


def _prelu_impl(args, attrs, out_type):
    x, alpha = args
    axis = attrs.axis % x.ndim
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return np.where(x > 0, x, x * alpha.reshape(shape)).astype(x.dtype)


def _softmax_impl(args, attrs, out_type):
    x = args[0]
    if x.size == 0:  # nothing to normalize (np.max of an empty axis has no identity)
        return x.copy()
    shifted = x - np.max(x, axis=attrs.axis, keepdims=True)
    exp = np.exp(shifted)
    return (exp / np.sum(exp, axis=attrs.axis, keepdims=True)).astype(x.dtype)


def _log_softmax_impl(args, attrs, out_type):
    x = args[0]
    if x.size == 0:
        return x.copy()
    shifted = x - np.max(x, axis=attrs.axis, keepdims=True)
    return (shifted - np.log(np.sum(np.exp(shifted), axis=attrs.axis, keepdims=True))).astype(x.dtype)


# --- TE lowerings (tvm imported inside: importing the registry must not import tvm)


def _relu_te(inputs, attrs, out_type):
    from tvm import tirx

    from ..te_support import const, is_float_dtype, map_compute

    dtype = out_type.dtype
    zero = const(0, dtype)
    if not is_float_dtype(dtype):
        return map_compute(inputs[0], lambda v: tirx.max(v, zero), "T_relu")
    # np.maximum(x, 0) exactly: nan fails the test and stays nan, -0 becomes +0. topi's max(x, 0)
    # is LLVM's select(x > 0, x, 0), which turns nan into 0. One compare-select, like that one.
    return map_compute(inputs[0], lambda v: tirx.Select(v <= zero, zero, v), "T_relu")


def _leaky_relu_te(inputs, attrs, out_type):
    from tvm import topi

    return topi.nn.leaky_relu(inputs[0], attrs.alpha)


def _prelu_te(inputs, attrs, out_type):
    from tvm import topi

    return topi.nn.prelu(inputs[0], inputs[1], attrs.axis % len(inputs[0].shape))


def _softmax_te(inputs, attrs, out_type):
    from tvm import topi

    # float16 runs in float32 (topi alone would sum the exponentials in float16).
    x = inputs[0]
    return cast(topi.nn.softmax(cast(x, accumulate_dtype(x.dtype)), attrs.axis), x.dtype)


def _log_softmax_te(inputs, attrs, out_type):
    from tvm import topi

    x = inputs[0]
    return cast(topi.nn.log_softmax(cast(x, accumulate_dtype(x.dtype)), attrs.axis), x.dtype)


register(
    NNOpDef(
        "nn.relu",
        1,
        _identity_rel("nn.relu"),
        OpPattern.ELEMWISE,
        _relu_impl,
        te_impl=_relu_te,
        description="Rectified linear unit, np.maximum(x, 0): nan stays nan (as in numpy, PyTorch and "
        "ONNX Runtime), -0 becomes +0.",
    )
)
register(
    NNOpDef(
        "nn.leaky_relu",
        1,
        _identity_rel("nn.leaky_relu"),
        OpPattern.ELEMWISE,
        _leaky_relu_impl,
        te_impl=_leaky_relu_te,
        attrs=(AttrField("alpha", 0.25, to_float, "slope for x < 0"),),
        extras={"builder_defaults": {"alpha": 0.01}},
        description="x if x > 0 else alpha * x.",
    )
)
register(
    NNOpDef(
        "nn.prelu",
        2,
        _prelu_rel,
        OpPattern.BROADCAST,
        _prelu_impl,
        te_impl=_prelu_te,
        infer_args=vector_inference("nn.prelu", (1,), _prelu_axis),
        attrs=(AttrField("axis", 1, to_int, "the channel axis alpha runs along"),),
        description="Parametric ReLU: x if x > 0 else alpha[c] * x, per channel.",
    )
)
register(
    NNOpDef(
        "nn.softmax",
        1,
        _softmax_rel("nn.softmax"),
        OpPattern.OPAQUE,
        _softmax_impl,
        te_impl=_softmax_te,
        attrs=(AttrField("axis", -1, to_int),),
        description="exp(x) / sum(exp(x)) along axis.",
    )
)
register(
    NNOpDef(
        "nn.log_softmax",
        1,
        _softmax_rel("nn.log_softmax"),
        OpPattern.OPAQUE,
        _log_softmax_impl,
        te_impl=_log_softmax_te,
        attrs=(AttrField("axis", -1, to_int),),
        description="log(softmax(x)) along axis, computed stably.",
    )
)
