"""Normalization and dropout: batch/layer/instance/group norm, l2_normalize, dropout."""

from __future__ import annotations

import numpy as np

from ....ty import TensorType, TupleType
from ...common import expect_tensor, fmt_type, normalize_axis
from ...registry import AttrField, OpPattern, RelationError, register
from ._common import NNOpDef, compute_dtype, to_bool, to_float, to_int, to_ints, type_matches, vector_inference
from .norm_te import batch_norm_te, dropout_te, group_norm_te, instance_norm_te, l2_normalize_te, layer_norm_te


def _check_params(op_name: str, data: TensorType, axis: int, arg_types, names) -> None:
    expected = TensorType((data.shape[axis],), data.dtype)
    for ty, name in zip(arg_types, names):
        param = expect_tensor(ty, op_name, name)
        if not type_matches(param, expected):
            raise RelationError(
                f"{op_name}: {name} must be {fmt_type(expected)} to match axis {axis} of data {fmt_type(data)}, "
                f"got {fmt_type(param)}"
            )


def _batch_norm_axis(data: TensorType, attrs) -> int:
    # TVM accepts -1 (the last axis) but no other negative axis here.
    if not -1 <= attrs.axis < data.ndim:
        raise RelationError(f"nn.batch_norm: axis {attrs.axis} is out of range for data {fmt_type(data)}")
    return attrs.axis if attrs.axis != -1 else data.ndim - 1


def _batch_norm_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.batch_norm", "data")
    axis = _batch_norm_axis(data, attrs)
    _check_params("nn.batch_norm", data, axis, arg_types[1:], ("gamma", "beta", "moving_mean", "moving_var"))
    vector = TensorType((data.shape[axis],), data.dtype)
    return TupleType([data, vector, vector])


def _channel_axis(op_name: str):
    def axis_of(data: TensorType, attrs) -> int:
        return normalize_axis(attrs.axis, data.ndim, op_name)

    return axis_of


def _per_channel_rel(op_name: str, names=("gamma", "beta")):
    def rel(arg_types, attrs):
        data = expect_tensor(arg_types[0], op_name, "data")
        axis = _channel_axis(op_name)(data, attrs)
        _check_params(op_name, data, axis, arg_types[1:], names)
        if op_name == "nn.group_norm":
            channels = data.shape[axis]
            if attrs.num_groups < 1 or (isinstance(channels, int) and channels % attrs.num_groups):
                raise RelationError(
                    f"nn.group_norm: num_groups ({attrs.num_groups}) must divide the {channels} channels of {fmt_type(data)}"
                )
        if op_name == "nn.instance_norm" and axis == 0:
            raise RelationError(f"nn.instance_norm: axis must not be the batch axis 0 of {fmt_type(data)}")
        return data

    return rel


def _l2_normalize_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.l2_normalize", "data")
    for axis in attrs.axis:
        normalize_axis(axis, data.ndim, "nn.l2_normalize")
    return data


def _dropout_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.dropout", "data")
    return TupleType([data, TensorType(data.shape, data.dtype)])


def _channel_shape(ndim: int, axis: int, size: int) -> list[int]:
    shape = [1] * ndim
    shape[axis] = size
    return shape


def _scale_shift(normed, gamma, beta, attrs, axis):
    shape = _channel_shape(normed.ndim, axis, normed.shape[axis])
    if attrs.scale:
        normed = normed * gamma.reshape(shape)
    if attrs.center:
        normed = normed + beta.reshape(shape)
    return normed


def _batch_norm_impl(args, attrs, out_type):
    data, gamma, beta, mean, var = args
    acc = compute_dtype(data.dtype)
    axis = attrs.axis % data.ndim
    shape = _channel_shape(data.ndim, axis, data.shape[axis])
    x = data.astype(acc, copy=False)
    normed = (x - mean.astype(acc).reshape(shape)) / np.sqrt(var.astype(acc).reshape(shape) + attrs.epsilon)
    out = _scale_shift(normed, gamma.astype(acc), beta.astype(acc), attrs, axis)
    # Inference semantics (as topi with training=False): the statistics pass through.
    return out.astype(data.dtype), mean.copy(), var.copy()


def _normalize(x, axes, epsilon):
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean(np.square(x - mean), axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon)


def _layer_norm_impl(args, attrs, out_type):
    data, gamma, beta = args
    acc = compute_dtype(data.dtype)
    axis = attrs.axis % data.ndim
    normed = _normalize(data.astype(acc, copy=False), (axis,), attrs.epsilon)
    return _scale_shift(normed, gamma.astype(acc), beta.astype(acc), attrs, axis).astype(data.dtype)


def _instance_norm_impl(args, attrs, out_type):
    data, gamma, beta = args
    acc = compute_dtype(data.dtype)
    axis = attrs.axis % data.ndim
    axes = tuple(i for i in range(1, data.ndim) if i != axis)
    normed = _normalize(data.astype(acc, copy=False), axes, attrs.epsilon)
    return _scale_shift(normed, gamma.astype(acc), beta.astype(acc), attrs, axis).astype(data.dtype)


def _group_norm_impl(args, attrs, out_type):
    data, gamma, beta = args
    acc = compute_dtype(data.dtype)
    axis = attrs.axis % data.ndim
    groups = attrs.num_groups
    shape = data.shape
    grouped = data.astype(acc, copy=False).reshape(shape[:axis] + (groups, shape[axis] // groups) + shape[axis + 1 :])
    axes = tuple(i for i in range(1, grouped.ndim) if i != axis)
    normed = _normalize(grouped, axes, attrs.epsilon).reshape(shape)
    return _scale_shift(normed, gamma.astype(acc), beta.astype(acc), attrs, axis).astype(data.dtype)


def _l2_normalize_impl(args, attrs, out_type):
    x = args[0]
    acc = compute_dtype(x.dtype)
    axes = tuple(a % x.ndim for a in attrs.axis) if attrs.axis else None
    squares = np.sum(np.square(x.astype(acc, copy=False)), axis=axes, keepdims=True)
    return (x / np.sqrt(np.maximum(squares, attrs.eps))).astype(x.dtype)


def _dropout_impl(args, attrs, out_type):
    x = args[0]
    return x.copy(), np.ones(x.shape, dtype=x.dtype)


def _norm_attrs(axis_default: int) -> tuple:
    return (
        AttrField("axis", axis_default, to_int, "the channel axis"),
        AttrField("epsilon", 1e-5, to_float),
        AttrField("center", True, to_bool, "add beta"),
        AttrField("scale", True, to_bool, "multiply by gamma"),
    )


register(
    NNOpDef(
        "nn.batch_norm",
        5,
        _batch_norm_rel,
        OpPattern.OPAQUE,
        _batch_norm_impl,
        te_impl=batch_norm_te,
        infer_args=vector_inference("nn.batch_norm", (1, 2, 3, 4), _batch_norm_axis),
        attrs=_norm_attrs(1),
        description="Inference batch norm; returns (out, moving_mean, moving_var) like TVM.",
        extras={"tuple_outputs": 3},
    )
)
register(
    NNOpDef(
        "nn.layer_norm",
        3,
        _per_channel_rel("nn.layer_norm"),
        OpPattern.OPAQUE,
        _layer_norm_impl,
        te_impl=layer_norm_te,
        infer_args=vector_inference("nn.layer_norm", (1, 2), _channel_axis("nn.layer_norm")),
        attrs=_norm_attrs(-1),
        description="Normalize along one axis, then scale by gamma and shift by beta.",
    )
)
register(
    NNOpDef(
        "nn.instance_norm",
        3,
        _per_channel_rel("nn.instance_norm"),
        OpPattern.OPAQUE,
        _instance_norm_impl,
        te_impl=instance_norm_te,
        infer_args=vector_inference("nn.instance_norm", (1, 2), _channel_axis("nn.instance_norm")),
        attrs=_norm_attrs(1),
        description="Normalize each (sample, channel) over the remaining axes.",
    )
)
register(
    NNOpDef(
        "nn.group_norm",
        3,
        _per_channel_rel("nn.group_norm"),
        OpPattern.OPAQUE,
        _group_norm_impl,
        te_impl=group_norm_te,
        infer_args=vector_inference("nn.group_norm", (1, 2), _channel_axis("nn.group_norm")),
        attrs=(AttrField("num_groups", 0, to_int),) + _norm_attrs(1),
        description="Normalize groups of channels of each sample.",
    )
)
register(
    NNOpDef(
        "nn.l2_normalize",
        1,
        _l2_normalize_rel,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _l2_normalize_impl,
        te_impl=l2_normalize_te,
        attrs=(AttrField("eps", convert=to_float), AttrField("axis", convert=to_ints)),
        extras={"builder_defaults": {"axis": ()}},
        description="x / sqrt(max(sum(x^2, axis), eps)).",
    )
)
register(
    NNOpDef(
        "nn.dropout",
        1,
        _dropout_rel,
        OpPattern.OPAQUE,
        _dropout_impl,
        te_impl=dropout_te,
        attrs=(AttrField("rate", 0.5, to_float),),
        description="Identity at inference; returns (out, mask) like TVM (the builder returns field 0).",
        extras={"builder_post": lambda call: _first_field(call)},
    )
)


def _first_field(call):
    from ....expr import TupleGetItem

    return TupleGetItem(call, 0)
