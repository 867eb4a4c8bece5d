"""Gradients of the neural-network operators: dense/matmul/batch_matmul, bias_add, softmax, prelu, convolutions."""

from __future__ import annotations

from ...ty import AnyDim
from ..families.nn._common import padding_nd, spatial_pair
from ..registry import RelationError
from . import register_gradient
from ._support import GradientError, op, static_shape, tensor_type


def _in_dtype_of(result, arg, orig):
    """Bring a gradient computed in the result's dtype (out_dtype) back to the argument's dtype."""
    if tensor_type(orig).dtype != tensor_type(arg).dtype:
        return op("cast_like", result, arg)
    return result


def _swap_last(expr, ndim: int):
    return op("transpose", expr, axes=list(range(ndim - 2)) + [ndim - 1, ndim - 2])


def _rows(expr, ndim: int, width):
    """A rank-2 view (rows, width) of a tensor whose leading axes are rows."""
    if ndim == 2:
        return expr
    if isinstance(width, AnyDim):
        raise GradientError("the gradient of a matrix product with leading axes needs a static last dimension")
    return op("reshape", expr, newshape=[-1, width])


def _matmul_grads(orig, grad, transpose_a: bool, transpose_b: bool):
    """out = A' @ B' with A' = A (swapped if transpose_a, any leading axes) and B' = B (transposed if transpose_b).

    dA' = grad @ B'^T; dB' = A'^T @ grad with A's leading axes folded into the rows.
    """
    a, b = orig.args
    a_ndim = len(tensor_type(a).shape)
    out_shape = tensor_type(orig).shape
    reduce_extent = tensor_type(b).shape[1 if transpose_b else 0]
    units = out_shape[-1]
    grad_a = op("nn.matmul", grad, b, units=None, transpose_b=not transpose_b)
    if transpose_a:
        grad_a = _swap_last(grad_a, a_ndim)
    a_prime = _swap_last(a, a_ndim) if transpose_a else a
    a_rows = _rows(a_prime, a_ndim, reduce_extent)
    grad_rows = _rows(grad, a_ndim, units)  # the result has A's rank
    if transpose_b:
        grad_b = op("nn.matmul", grad_rows, a_rows, units=None, transpose_a=True)
    else:
        grad_b = op("nn.matmul", a_rows, grad_rows, units=None, transpose_a=True)
    return [_in_dtype_of(grad_a, a, orig), _in_dtype_of(grad_b, b, orig)]


@register_gradient("nn.dense")
def _dense(orig, grad):
    return _matmul_grads(orig, grad, False, True)


@register_gradient("nn.matmul")
def _matmul(orig, grad):
    return _matmul_grads(orig, grad, bool(orig.attrs.transpose_a), bool(orig.attrs.transpose_b))


@register_gradient("nn.batch_matmul")
def _batch_matmul(orig, grad):
    a, b = orig.args
    transpose_a, transpose_b = bool(orig.attrs.transpose_a), bool(orig.attrs.transpose_b)
    grad_a = op("nn.batch_matmul", grad, b, transpose_a=False, transpose_b=not transpose_b)
    if transpose_a:
        grad_a = op("transpose", grad_a, axes=[0, 2, 1])
    grad_b = op("nn.batch_matmul", a, grad, transpose_a=not transpose_a, transpose_b=False)
    if transpose_b:
        grad_b = op("transpose", grad_b, axes=[0, 2, 1])
    batch = tensor_type(orig).shape[0]
    grads = []
    for arg, g in ((a, grad_a), (b, grad_b)):
        if tensor_type(arg).shape[0] != batch or isinstance(batch, AnyDim):
            g = op("collapse_sum_like", g, arg)  # a batch of 1 was broadcast
        grads.append(_in_dtype_of(g, arg, orig))
    return grads


@register_gradient("nn.bias_add")
def _bias_add(orig, grad):
    return [grad, op("sum", grad, axis=[orig.attrs.axis], exclude=True)]


@register_gradient("nn.softmax")
def _softmax(orig, grad):
    weighted = op("sum", grad * orig, axis=[orig.attrs.axis], keepdims=True)
    return [(grad - weighted) * orig]


@register_gradient("nn.log_softmax")
def _log_softmax(orig, grad):
    total = op("sum", grad, axis=[orig.attrs.axis], keepdims=True)
    return [grad - op("exp", orig) * total]


@register_gradient("nn.prelu")
def _prelu(orig, grad):
    x, alpha = orig.args
    ndim = len(tensor_type(x).shape)
    axis = orig.attrs.axis + ndim if orig.attrs.axis < 0 else orig.attrs.axis
    slope = op("expand_dims", alpha, axis=1, num_newaxis=ndim - axis - 1) if axis < ndim - 1 else alpha
    positive = op("greater", x, op("zeros_like", x))
    grad_x = op("where", positive, grad, grad * slope)
    grad_alpha = op("sum", op("where", positive, op("zeros_like", grad), grad * x), axis=[axis], exclude=True)
    return [grad_x, grad_alpha]


# ---------------------------------------------------------------- convolutions (TVM's conv2d_grad, any rank)

_CONV_LAYOUTS = {1: ("NCW", "OIW"), 2: ("NCHW", "OIHW"), 3: ("NCDHW", "OIDHW")}


def transpose_padding(size: int, out: int, kernel: int, stride: int, dilation: int, before: int):
    """(pad_after, output_padding) making a transposed convolution of `out` positions cover exactly `size`.

    The full transposed output has (out - 1) * stride + dilation * (kernel - 1) + 1 positions; the
    first `before` belong to the padding, and positions no window reached are made up at the end.
    """
    full = (out - 1) * stride + dilation * (kernel - 1) + 1
    return max(0, full - before - size), max(0, size + before - full)


def conv_geometry(orig, op_name: str, nd: int):
    """Static shapes and normalized attributes of a forward convolution call."""
    data_layout, kernel_layout = _CONV_LAYOUTS[nd]
    attrs = orig.attrs
    if (
        attrs.data_layout != data_layout
        or attrs.kernel_layout != kernel_layout
        or attrs.out_layout not in ("", data_layout)
    ):
        raise GradientError(
            f"the gradient of {op_name} is defined for layouts {data_layout}/{kernel_layout}, got "
            f"data_layout={attrs.data_layout!r}, kernel_layout={attrs.kernel_layout!r}, out_layout={attrs.out_layout!r}"
        )
    try:
        strides = spatial_pair(attrs.strides, op_name, "strides", nd)
        dilation = spatial_pair(attrs.dilation, op_name, "dilation", nd)
        pads = padding_nd(attrs.padding, nd, op_name)
    except RelationError as exc:
        raise GradientError(str(exc)) from None
    data_shape = static_shape(orig.args[0], op_name, "data")
    weight_shape = static_shape(orig.args[1], op_name, "weight")
    out_shape = static_shape(orig, op_name, "result")
    return data_shape, weight_shape, out_shape, strides, dilation, pads


def _conv_grad(nd: int):
    op_name = f"nn.conv{nd}d"

    def rule(orig, grad):
        data, weight = orig.args
        data_shape, weight_shape, out_shape, strides, dilation, pads = conv_geometry(orig, op_name, nd)
        groups = orig.attrs.groups
        spatial = range(nd)
        fitted = [
            transpose_padding(
                data_shape[2 + i], out_shape[2 + i], weight_shape[2 + i], strides[i], dilation[i], pads[i]
            )
            for i in spatial
        ]
        grad_data = op(
            f"nn.conv{nd}d_transpose",
            grad,
            weight,
            channels=data_shape[1],
            kernel_size=weight_shape[2:],
            strides=strides,
            padding=list(pads[:nd]) + [after for after, _ in fitted],
            output_padding=[extra for _, extra in fitted],
            dilation=dilation,
            groups=groups,
        )
        grad_weight = _conv_weight_grad(
            op_name, data, grad, data_shape, weight_shape, out_shape, strides, dilation, pads, groups
        )
        return [_in_dtype_of(grad_data, data, orig), _in_dtype_of(grad_weight, weight, orig)]

    return rule


def _conv_weight_grad(op_name, data, grad, data_shape, weight_shape, out_shape, strides, dilation, pads, groups):
    """dW[o, c, k] = sum over batch and positions of grad[n, o, p] * data[n, c, p * stride + k * dilation].

    That is itself a convolution with batch and channels swapped (data channels as the batch, the
    batch as channels, the gradient as kernel), strides and dilation exchanged, and the groups kept
    apart by folding each group's batch into its own channel block.
    """
    nd = len(data_shape) - 2
    batch, channels = data_shape[:2]
    out_channels = out_shape[1]
    rest = list(range(3, 3 + nd))
    if groups == 1:
        lhs = op("transpose", data, axes=[1, 0] + list(range(2, 2 + nd)))
        rhs = op("transpose", grad, axes=[1, 0] + list(range(2, 2 + nd)))
    else:
        per_group, out_per_group = channels // groups, out_channels // groups
        lhs = op("reshape", data, newshape=[batch, groups, per_group, *data_shape[2:]])
        lhs = op(
            "reshape",
            op("transpose", lhs, axes=[2, 1, 0] + rest),
            newshape=[per_group, groups * batch, *data_shape[2:]],
        )
        rhs = op("reshape", grad, newshape=[batch, groups, out_per_group, *out_shape[2:]])
        rhs = op("reshape", op("transpose", rhs, axes=[1, 2, 0] + rest), newshape=[out_channels, batch, *out_shape[2:]])
    swapped = op(op_name, lhs, rhs, strides=dilation, padding=pads, dilation=strides, groups=groups)
    # The swapped convolution may reach a little past the kernel (positions no forward window used).
    reach = [
        (data_shape[2 + i] + pads[i] + pads[i + nd] - ((out_shape[2 + i] - 1) * strides[i] + 1)) // dilation[i] + 1
        for i in range(nd)
    ]
    if reach != list(weight_shape[2:]):
        swapped = op(
            "strided_slice",
            swapped,
            begin=[0] * (2 + nd),
            end=[weight_shape[1], out_channels, *weight_shape[2:]],
            strides=[1],
        )
    return op("transpose", swapped, axes=[1, 0] + list(range(2, 2 + nd)))


for _nd in (1, 2, 3):
    register_gradient(f"nn.conv{_nd}d", _conv_grad(_nd))
