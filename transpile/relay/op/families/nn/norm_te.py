"""TE lowerings of the normalizations and dropout, in the numpy reference's arithmetic.

Statistics are two-pass (mean, then mean of squared deviations) in float32 for float16 data,
as the reference does; topi's layer_norm/batch_norm are not used because they ignore
center/scale (layer_norm) or accumulate in the data dtype.
"""

from __future__ import annotations

from ..te_support import require, require_equal
from .te_common import accumulate_dtype, dims, identity


def _require_per_channel(data, axis, params, op_name):
    """The type relation's promise for `?` dims: one parameter value per channel of `axis`."""
    for param in params:
        require_equal((data.shape[axis], param.shape[0]), f"{op_name}: a parameter's length differs from axis {axis}")


def _param(tensor, index, acc):
    return tensor[index].astype(acc)


def _scale_shift(value, gamma, beta, channel, attrs, acc):
    if attrs.scale:
        value = value * _param(gamma, channel, acc)
    if attrs.center:
        value = value + _param(beta, channel, acc)
    return value


def batch_norm_te(inputs, attrs, out_type):
    from tvm import te

    data, gamma, beta, mean, var = inputs
    dtype = str(data.dtype)
    acc = accumulate_dtype(dtype)
    axis = attrs.axis % len(data.shape)
    _require_per_channel(data, axis, (gamma, beta, mean, var), "nn.batch_norm")

    def element(*i):
        c = i[axis]
        normed = (data(*i).astype(acc) - _param(mean, c, acc)) / te.sqrt(
            _param(var, c, acc) + te.const(attrs.epsilon, acc)
        )
        return _scale_shift(normed, gamma, beta, c, attrs, acc).astype(dtype)

    out = te.compute(data.shape, element, name="T_batch_norm", tag="injective")
    # Inference form: the moving statistics pass through (as copies: outputs are separate buffers).
    return [out, identity(mean, "T_moving_mean"), identity(var, "T_moving_var")]


def _normalize(data, gamma, beta, attrs, param_axis, reduce_axes, group_axis=None, groups=1):
    """(x - mean) / sqrt(var + eps) * gamma + beta, statistics over `reduce_axes` (and within a channel group)."""
    from tvm import te

    dtype = str(data.dtype)
    acc = accumulate_dtype(dtype)
    shape = dims(data)
    per_group = shape[group_axis] // groups if group_axis is not None else 1
    stats_shape = [1 if d in reduce_axes else (groups if d == group_axis else size) for d, size in enumerate(shape)]
    count = per_group
    for d in reduce_axes:
        count *= shape[d]

    def reduce_vars():
        rvars = {d: te.reduce_axis((0, shape[d]), name=f"r{d}") for d in reduce_axes}
        within = te.reduce_axis((0, per_group), name="rg") if group_axis is not None else None
        return rvars, within

    def data_index(key, rvars, within):
        index = []
        for d in range(len(shape)):
            if d in rvars:
                index.append(rvars[d])
            elif d == group_axis:
                index.append(key[d] * per_group + within)
            else:
                index.append(key[d])
        return index

    def all_vars(rvars, within):
        return list(rvars.values()) + ([within] if within is not None else [])

    def total(*key):
        rvars, within = reduce_vars()
        return te.sum(data(*data_index(key, rvars, within)).astype(acc), axis=all_vars(rvars, within))

    sums = te.compute(stats_shape, total, name="T_norm_sum")
    inv_count = te.const(1.0 / count, acc) if isinstance(count, int) else 1.0 / count.astype(acc)

    def squared(*key):
        rvars, within = reduce_vars()
        deviation = data(*data_index(key, rvars, within)).astype(acc) - sums(*key) * inv_count
        return te.sum(deviation * deviation, axis=all_vars(rvars, within))

    squares = te.compute(stats_shape, squared, name="T_norm_var")

    def stats_key(i):
        return [0 if d in reduce_axes else (i[d] // per_group if d == group_axis else i[d]) for d in range(len(shape))]

    def element(*i):
        key = stats_key(i)
        mean = sums(*key) * inv_count
        normed = (data(*i).astype(acc) - mean) / te.sqrt(squares(*key) * inv_count + te.const(attrs.epsilon, acc))
        return _scale_shift(normed, gamma, beta, i[param_axis], attrs, acc).astype(dtype)

    return te.compute(data.shape, element, name="T_norm", tag="injective")


def layer_norm_te(inputs, attrs, out_type):
    data, gamma, beta = inputs
    axis = attrs.axis % len(data.shape)
    _require_per_channel(data, axis, (gamma, beta), "nn.layer_norm")
    return _normalize(data, gamma, beta, attrs, axis, (axis,))


def instance_norm_te(inputs, attrs, out_type):
    data, gamma, beta = inputs
    axis = attrs.axis % len(data.shape)
    _require_per_channel(data, axis, (gamma, beta), "nn.instance_norm")
    return _normalize(data, gamma, beta, attrs, axis, tuple(d for d in range(1, len(data.shape)) if d != axis))


def group_norm_te(inputs, attrs, out_type):
    data, gamma, beta = inputs
    axis = attrs.axis % len(data.shape)
    _require_per_channel(data, axis, (gamma, beta), "nn.group_norm")
    require(data.shape[axis] % attrs.num_groups == 0, f"nn.group_norm: channels not divisible by {attrs.num_groups} groups")
    reduce_axes = tuple(d for d in range(1, len(data.shape)) if d != axis)
    return _normalize(data, gamma, beta, attrs, axis, reduce_axes, group_axis=axis, groups=attrs.num_groups)


def l2_normalize_te(inputs, attrs, out_type):
    from tvm import te

    data = inputs[0]
    dtype = str(data.dtype)
    acc = accumulate_dtype(dtype)
    ndim = len(data.shape)
    axes = sorted({a % ndim for a in attrs.axis}) if attrs.axis else list(range(ndim))
    stats_shape = [1 if d in axes else data.shape[d] for d in range(ndim)]

    def total(*key):
        rvars = {d: te.reduce_axis((0, data.shape[d]), name=f"r{d}") for d in axes}
        value = data(*[rvars.get(d, key[d]) for d in range(ndim)]).astype(acc)
        return te.sum(value * value, axis=list(rvars.values()))

    squares = te.compute(stats_shape, total, name="T_l2_sum")

    def element(*i):
        norm = te.sqrt(te.max(squares(*[0 if d in axes else i[d] for d in range(ndim)]), te.const(attrs.eps, acc)))
        return (data(*i).astype(acc) / norm).astype(dtype)

    return te.compute(data.shape, element, name="T_l2_normalize", tag="injective")


def dropout_te(inputs, attrs, out_type):
    from tvm import te

    data = inputs[0]
    ones = te.compute(data.shape, lambda *i: te.const(1, str(data.dtype)), name="T_dropout_mask")
    return [identity(data, "T_dropout"), ones]
