"""SimplifyInference: inference-time normalization and dropout as plain arithmetic (TVM's simplify_inference.cc).

- `nn.batch_norm(x, gamma, beta, mean, var).0` -> `x * scale + shift` with, over the channel axis,
  scale = 1 / sqrt(var + eps) [* gamma] and shift = -mean * scale [+ beta], left as Relay
  expressions for FoldConstant to precompute when the statistics are constants; `.1` / `.2` are
  the moving mean / variance themselves (inference batch_norm passes them through).
- `nn.dropout(x).0` -> `x`.
- `nn.layer_norm`, `nn.instance_norm`, `nn.group_norm` -> mean / variance / divide (+ gamma, beta);
  `nn.l2_normalize` -> `x / sqrt(max(sum(x * x, axis), eps))`.
The projections are found on the call itself (graph form) or through a let-bound variable.
"""

from __future__ import annotations

from .. import expr as E
from ..ty import AnyDim, TensorType
from .infra import FunctionPass
from .patterns import call as make_call, expand_bias_to_match_axis, op_name, scalar, type_of
from .rewriter import Rewriter

__all__ = ["SimplifyInference", "simplify_inference"]


def _axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def batch_norm_to_arithmetic(args, attrs, data_type: TensorType, span=None):
    """x * scale + shift with scale and shift per channel (TVM's BatchNormToInferUnpack)."""
    call = _spanned(span)
    data, gamma, beta, mean, var = args
    dtype = data_type.dtype
    scale = call("divide", scalar(1.0, dtype), call("sqrt", call("add", var, scalar(attrs.epsilon, dtype))))
    if attrs.scale:
        scale = call("multiply", scale, gamma)
    shift = call("multiply", call("negative", mean), scale)
    if attrs.center:
        shift = call("add", shift, beta)
    ndim = data_type.ndim
    axis = _axis(attrs.axis, ndim)
    scale = expand_bias_to_match_axis(scale, ndim, [axis])
    shift = expand_bias_to_match_axis(shift, ndim, [axis])
    return call("add", call("multiply", data, scale), shift)


def _spanned(span):
    """The `call` builder giving every new call the span of the operator it replaces (for generated comments)."""
    return lambda name, *args, **attrs: make_call(name, *args, span=span, **attrs)


def _normalize(call, data, axes, epsilon: float, dtype: str):
    """(data - mean) / sqrt(variance + eps) over `axes`, keeping dims."""
    mean = call("mean", data, axis=axes, keepdims=True, exclude=False)
    variance = call("variance", data, mean, axis=axes, keepdims=True, exclude=False, unbiased=False)
    denominator = call("sqrt", call("add", variance, scalar(epsilon, dtype)))
    return call("divide", call("subtract", data, mean), denominator)


def _scale_and_center(call, out, gamma, beta, attrs, ndim: int, axis: int):
    if attrs.scale:
        out = call("multiply", out, expand_bias_to_match_axis(gamma, ndim, [axis]))
    if attrs.center:
        out = call("add", out, expand_bias_to_match_axis(beta, ndim, [axis]))
    return out


def layer_norm_to_arithmetic(args, attrs, data_type: TensorType, span=None):
    call = _spanned(span)
    data, gamma, beta = args
    axis = _axis(attrs.axis, data_type.ndim)
    out = _normalize(call, data, [axis], attrs.epsilon, data_type.dtype)
    return _scale_and_center(call, out, gamma, beta, attrs, data_type.ndim, axis)


def instance_norm_to_arithmetic(args, attrs, data_type: TensorType, span=None):
    call = _spanned(span)
    data, gamma, beta = args
    ndim = data_type.ndim
    axis = _axis(attrs.axis, ndim)
    reduced = [i for i in range(1, ndim) if i != axis]
    out = _normalize(call, data, reduced, attrs.epsilon, data_type.dtype)
    return _scale_and_center(call, out, gamma, beta, attrs, ndim, axis)


def group_norm_to_arithmetic(args, attrs, data_type: TensorType, span=None):
    """Reshape channels into (groups, channels / groups), normalize each group, reshape back."""
    call = _spanned(span)
    shape = data_type.concrete_shape
    if shape is None:
        return None
    data, gamma, beta = args
    ndim = len(shape)
    axis = _axis(attrs.axis, ndim)
    groups = attrs.num_groups
    grouped = shape[:axis] + (groups, shape[axis] // groups) + shape[axis + 1 :]
    reduced = [i for i in range(1, ndim + 1) if i != axis]
    out = _normalize(call, call("reshape", data, newshape=grouped, allowzero=True), reduced, attrs.epsilon, data_type.dtype)
    out = call("reshape", out, newshape=shape, allowzero=True)
    return _scale_and_center(call, out, gamma, beta, attrs, ndim, axis)


def l2_normalize_to_arithmetic(args, attrs, data_type: TensorType, span=None):
    call = _spanned(span)
    (data,) = args
    squares = call("sum", call("multiply", data, data), axis=attrs.axis, keepdims=True, exclude=False)
    return call("divide", data, call("sqrt", call("maximum", squares, scalar(attrs.eps, data_type.dtype))))


_EXPANSIONS = {
    "nn.layer_norm": layer_norm_to_arithmetic,
    "nn.instance_norm": instance_norm_to_arithmetic,
    "nn.group_norm": group_norm_to_arithmetic,
    "nn.l2_normalize": l2_normalize_to_arithmetic,
}


_PER_CHANNEL = ("nn.batch_norm", "nn.layer_norm", "nn.instance_norm", "nn.group_norm")


def _channels_static(name: str, call, data_type: TensorType) -> bool:
    """Whether the channel count and every per-channel parameter's length are static: with a `?`
    one, the broadcasting arithmetic would accept a parameter of length 1 that the operator's
    kernel rejects at run time, so the operator stays."""
    if name not in _PER_CHANNEL or data_type.ndim == 0:
        return True
    dims = [data_type.shape[call.attrs.axis % data_type.ndim]]
    for arg in call.args[1:]:
        ty = type_of(arg)
        if not isinstance(ty, TensorType):
            return False
        dims.extend(ty.shape)
    return not any(isinstance(d, AnyDim) for d in dims)


class _InferenceSimplifier(Rewriter):
    def __init__(self):
        super().__init__()
        self.bound: dict[E.Var, E.Call] = {}  # let-bound batch_norm / dropout calls, by variable

    def visit_let(self, let):
        node = let
        while type(node) is E.Let:
            if op_name(node.value) in ("nn.batch_norm", "nn.dropout"):
                self.bound[node.var] = node.value
            node = node.body
        return super().visit_let(let)

    def rewrite_call(self, original, new):
        expand = _EXPANSIONS.get(op_name(new))
        if expand is None:
            return new
        data_type = type_of(original.args[0])
        if not isinstance(data_type, TensorType) or not _channels_static(op_name(new), original, data_type):
            return new
        out = expand(new.args, new.attrs, data_type, new.span)
        return new if out is None else out

    def rewrite_tuple_get_item(self, original, new):
        if type(new) is not E.TupleGetItem:
            return new
        producer, source = new.tuple_value, original.tuple_value
        if type(source) is E.Var and source in self.bound:
            source = self.bound[source]
            producer = self.visit(source)
        name = op_name(producer)
        if name == "nn.dropout" and new.index == 0:
            return producer.args[0]
        if name != "nn.batch_norm":
            return new
        if new.index in (1, 2):
            return producer.args[new.index + 2]  # the moving mean / variance pass through
        data_type = type_of(source.args[0])
        if not isinstance(data_type, TensorType) or not _channels_static(name, source, data_type):
            return new
        return batch_norm_to_arithmetic(producer.args, producer.attrs, data_type, producer.span)


def simplify_inference(func, mod=None, ctx=None):
    """The function with inference-time normalization expanded (see the module docstring)."""
    return _InferenceSimplifier().visit(func)


def SimplifyInference():
    """TVM's SimplifyInference pass (opt_level 0)."""
    return FunctionPass(simplify_inference, 0, "SimplifyInference")
