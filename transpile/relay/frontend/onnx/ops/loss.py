"""Converters of ONNX losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (with its log_prob output).

Both pick -input[n, target[n, d...], d...] per element, weighted by weight[target] (1 without
weights) and by 0 where target == ignore_index. `mean` divides the weighted sum by the sum of the
weights applied, which counts the elements not ignored when there are no weights: the
reference's rule, and PyTorch's.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter

_REDUCTIONS = ("none", "sum", "mean")


def negative_log_likelihood(ctx, log_prob, target, weight):
    b = ctx.b
    rank = b.ndim_of(log_prob)
    if rank < 2:
        raise b.error(f"the input must be N x C x D1 x ..., got {b.type_of(log_prob)}")
    if b.ndim_of(target) != rank - 1:
        raise b.error(f"the target {b.type_of(target)} must have the input's shape without its class axis")
    if np.dtype(b.dtype_of(target)).kind not in "iu":
        raise b.error(f"the target must hold integer class indices, got {b.type_of(target)}")
    reduction = ctx.attr("reduction", "mean")
    if reduction not in _REDUCTIONS:
        raise b.error(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    dtype, index_dtype = b.dtype_of(log_prob), b.dtype_of(target)
    zero = b.const(np.array(0, dtype=dtype))

    ignore_index = ctx.attr("ignore_index")
    kept = None
    if ignore_index is not None:
        kept = b.call("not_equal", target, b.const(np.array(ignore_index, dtype=index_dtype)))
        # An ignored target may lie outside [0, C): read class 0 there, and weigh it 0.
        target = b.call("where", kept, target, b.const(np.array(0, dtype=index_dtype)))
    picked = b.call("gather", log_prob, b.call("expand_dims", target, axis=1), axis=1)
    loss = b.call("negative", b.call("squeeze", picked, axis=[1]))

    weights = None
    if weight is not None:
        weights = b.call("take", b.call("cast", weight, dtype=dtype), target, axis=0, mode="clip")
    if kept is not None:
        mask = b.call("cast", kept, dtype=dtype)
        weights = mask if weights is None else b.call("where", kept, weights, zero)
    if weights is not None:
        loss = b.call("multiply", loss, weights)
    if reduction == "none":
        return loss
    total = b.call("sum", loss)
    if reduction == "sum":
        return total
    if weights is None:
        return b.call("mean", loss)
    return b.call("divide", total, b.call("sum", weights))


@converter("NegativeLogLikelihoodLoss")
def negative_log_likelihood_loss(ctx):
    return negative_log_likelihood(ctx, ctx.input(0), ctx.input(1), ctx.input(2, required=False))


@converter("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(ctx):
    b = ctx.b
    scores = ctx.input(0)
    if b.ndim_of(scores) < 2:
        raise b.error(f"the scores must be N x C x D1 x ..., got {b.type_of(scores)}")
    log_prob = b.call("nn.log_softmax", scores, axis=1)
    loss = negative_log_likelihood(ctx, log_prob, ctx.input(1), ctx.input(2, required=False))
    return [loss, log_prob]
