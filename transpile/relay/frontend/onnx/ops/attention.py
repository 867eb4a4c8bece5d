"""Converters of ONNX's transformer operators: Attention (opsets 23-25), RotaryEmbedding, SwiGLU, TensorScatter.

Attention builds one additive bias from the mask, the causal frontier, the sliding window and
the padding of `nonpad_kv_seqlen` (0 where a key is visible, -inf where not). The frontier and
window are constants when the key offset is (no cache, or an internal `past_key` cache); with an
external cache they are computed per batch from `nonpad_kv_seqlen`. A query row with no visible
key yields zeros (the spec's fully-masked-row rule), decided on that bias.
"""

from __future__ import annotations

import math

import numpy as np

from ..converters import converter
from .shape_values import normalize_axis
from .values import relay_dtype


def _scalar(b, value, dtype):
    return b.const(np.array(value, dtype=dtype))


def _wants_output(ctx, index: int) -> bool:
    return len(ctx.node.output) > index and ctx.node.output[index] != ""


def split_heads(ctx, x, heads: int, what: str):
    """(B, S, heads * D) -> (B, heads, S, D)."""
    b = ctx.b
    hidden = b.shape_of(x)[2]
    if not isinstance(hidden, int) or hidden % heads:
        raise b.error(f"the hidden size of {what} {b.type_of(x)} must be a known multiple of {heads} heads")
    return b.call("transpose", b.call("reshape", x, newshape=[0, 0, heads, hidden // heads]), axes=[0, 2, 1, 3])


def _heads_attr(ctx, name: str) -> int:
    value = ctx.attr(name)
    if value is None or int(value) <= 0:
        raise ctx.b.error(f"3-D inputs need a positive attribute {name}, got {value}")
    return int(value)


def _batched_product(ctx, a, b_, transpose_b: bool):
    """(B, H, M, K) x (B, H, K, N) (or its transpose) with batch_matmul over the flattened B*H."""
    b = ctx.b
    a_shape, b_shape = b.shape_of(a), b.shape_of(b_)
    heads = a_shape[1]
    a3 = b.call("reshape", a, newshape=[-1] + a_shape[2:])
    b3 = b.call("reshape", b_, newshape=[-1] + b_shape[2:])
    out = b.call("nn.batch_matmul", a3, b3, transpose_a=False, transpose_b=transpose_b)
    return b.call("reshape", out, newshape=[-1, heads] + b.shape_of(out)[1:])


# ---------------------------------------------------------------------------------- the bias


def _visibility_bias(b, allowed, dtype):
    """0 where `allowed`, -inf elsewhere."""
    return b.call("where", allowed, _scalar(b, 0, dtype), _scalar(b, -np.inf, dtype))


def _frontier(b, q_len, kv_len, offset, dtype, rule):
    """The bias of rule(i + offset - j) over queries i and keys j: (q, kv) for a constant offset, else (B, 1, q, kv)."""
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(kv_len).reshape(1, kv_len)
    if isinstance(offset, int):
        return b.const(np.where(rule(i + offset - j), 0, -np.inf).astype(dtype))
    distance = b.call(
        "add", b.call("reshape", offset, newshape=[-1, 1, 1, 1]), b.const((i - j).reshape(1, 1, q_len, kv_len))
    )
    return _visibility_bias(b, rule(distance), dtype)


def _attention_bias(ctx, q_len: int, kv_len: int, past_len: int, dtype: str):
    """The sum of the mask, causal frontier, window and padding biases that apply; None when none does."""
    b = ctx.b
    mask, nonpad = ctx.input(3, required=False), ctx.input(6, required=False)
    terms = []
    if mask is not None:
        if b.dtype_of(mask) == "bool":
            mask = _visibility_bias(b, mask, dtype)
        elif b.dtype_of(mask) != dtype:
            mask = b.call("cast", mask, dtype=dtype)
        mask_len = b.shape_of(mask)[-1]
        if not isinstance(mask_len, int):
            raise b.error(f"the key length of attn_mask {b.type_of(mask)} must be known at import")
        if mask_len < kv_len:  # a short mask hides the keys past its end
            widths = [(0, 0)] * (b.ndim_of(mask) - 1) + [(0, kv_len - mask_len)]
            mask = b.call("nn.pad", mask, _scalar(b, -np.inf, dtype), pad_width=widths)
        terms.append(mask)
    if nonpad is not None and ctx.input(4, required=False) is not None:
        raise b.error("nonpad_kv_seqlen cannot be combined with past_key / past_value")
    if nonpad is not None:
        offset = b.call("subtract", b.call("cast", nonpad, dtype="int64"), _scalar(b, q_len, "int64"))
    else:
        offset = past_len
    if ctx.attr("is_causal", 0):
        # Query i sees key j iff j <= i + offset: the distance i + offset - j is not negative.
        terms.append(_frontier(b, q_len, kv_len, offset, dtype, _window_rule(b, -1, 0)))
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    for size, sign in ((left, 1), (right, -1)):
        if size < -1:
            raise b.error(f"window sizes must be -1 or >= 0, got {size}")
        if size >= 0:
            terms.append(_frontier(b, q_len, kv_len, offset, dtype, _window_rule(b, sign, size)))
    if nonpad is not None:
        keys = b.const(np.arange(kv_len, dtype="int64").reshape(1, 1, 1, kv_len))
        valid = b.call("less", keys, b.call("reshape", b.call("cast", nonpad, dtype="int64"), newshape=[-1, 1, 1, 1]))
        terms.append(_visibility_bias(b, valid, dtype))
    if not terms:
        return None
    bias = terms[0]
    for term in terms[1:]:
        bias = b.call("add", bias, term)
    return bias


def _window_rule(b, sign: int, size: int):
    """The visibility test sign * distance <= size, on numpy distances or on Relay ones."""

    def rule(distance):
        if isinstance(distance, np.ndarray):
            return sign * distance <= size
        signed = distance if sign == 1 else b.call("negative", distance)
        return b.call("less_equal", signed, _scalar(b, size, "int64"))

    return rule


# ---------------------------------------------------------------------------------- Attention


@converter("Attention")
def attention(ctx):
    b = ctx.b
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = b.ndim_of(q)
    if rank not in (3, 4) or b.ndim_of(k) != rank or b.ndim_of(v) != rank:
        raise b.error(f"Q, K and V must all be 3-D or all 4-D, got {b.type_of(q)}, {b.type_of(k)}, {b.type_of(v)}")
    dtype = b.dtype_of(q)
    if rank == 3:
        q = split_heads(ctx, q, _heads_attr(ctx, "q_num_heads"), "Q")
        kv_heads = _heads_attr(ctx, "kv_num_heads")
        k, v = split_heads(ctx, k, kv_heads, "K"), split_heads(ctx, v, kv_heads, "V")
    head_size = b.shape_of(q)[3]
    if not isinstance(head_size, int):
        raise b.error(f"the head size of Q {b.type_of(q)} must be known at import")
    scale = ctx.attr("scale")
    scale = 1.0 / math.sqrt(head_size) if scale is None else float(scale)
    # Q and K are each scaled by sqrt(scale) before the product, against overflow (the spec's order).
    root = _scalar(b, np.sqrt(np.float64(scale)), dtype)
    past_key, past_value = ctx.input(4, required=False), ctx.input(5, required=False)
    if (past_key is None) != (past_value is None):
        raise b.error("past_key and past_value must be given together")
    past_len = 0
    if past_key is not None:
        past_len = b.shape_of(past_key)[2]
        k = b.call("concatenate", b.tuple([past_key, k]), axis=2)
        v = b.call("concatenate", b.tuple([past_value, v]), axis=2)
    present_key, present_value = k, v
    q_len, kv_len = b.shape_of(q)[2], b.shape_of(k)[2]
    if not all(isinstance(d, int) for d in (q_len, kv_len, past_len)):
        raise b.error(f"the sequence lengths of Q {b.type_of(q)} and K {b.type_of(k)} must be known at import")

    q_heads, k_heads, v_heads = b.shape_of(q)[1], b.shape_of(k)[1], b.shape_of(v)[1]
    if q_heads != k_heads:
        if k_heads != v_heads or q_heads % k_heads:
            raise b.error(f"{q_heads} query heads cannot be grouped over {k_heads} key / {v_heads} value heads")
        # Grouped-query attention: each key/value head serves q_heads / kv_heads consecutive query heads.
        k = b.call("repeat", k, repeats=q_heads // k_heads, axis=1)
        v = b.call("repeat", v, repeats=q_heads // k_heads, axis=1)

    scores = _batched_product(ctx, b.call("multiply", q, root), b.call("multiply", k, root), transpose_b=True)
    raw = scores
    softcap = float(ctx.attr("softcap", 0.0))
    if softcap > 0:
        cap = _scalar(b, softcap, dtype)
        scores = b.call("multiply", b.call("tanh", b.call("divide", scores, cap)), cap)
    capped = scores
    bias = _attention_bias(ctx, q_len, kv_len, past_len, dtype)
    if bias is not None:
        scores = b.call("add", scores, bias)
    precision = int(ctx.attr("softmax_precision", 0))
    softmax_dtype = relay_dtype(ctx, precision, "attribute 'softmax_precision'") if precision else dtype
    logits = scores if softmax_dtype == dtype else b.call("cast", scores, dtype=softmax_dtype)
    hidden = None
    if bias is not None:
        # A row with no visible key: softmax a row of zeros instead of -inf's (no NaN), then zero it.
        hidden = b.call("equal", b.call("max", bias, axis=[-1], keepdims=True), _scalar(b, -np.inf, dtype))
        logits = b.call("where", hidden, _scalar(b, 0, softmax_dtype), logits)
    probabilities = b.call("nn.softmax", logits, axis=-1)
    if hidden is not None:
        probabilities = b.call("where", hidden, _scalar(b, 0, softmax_dtype), probabilities)
    if softmax_dtype != dtype:
        probabilities = b.call("cast", probabilities, dtype=dtype)
    y = _batched_product(ctx, probabilities, v, transpose_b=False)
    if rank == 3:
        y = b.call("reshape", b.call("transpose", y, axes=[0, 2, 1, 3]), newshape=[0, 0, -1])
    outputs = [y, present_key, present_value]
    if _wants_output(ctx, 3):
        mode = int(ctx.attr("qk_matmul_output_mode", 0))
        if mode not in (0, 1, 2, 3):
            raise b.error(f"qk_matmul_output_mode must be 0 to 3, got {mode}")
        # Mode 0 is the raw product, as specified and as onnxruntime computes it (onnx's reference softcaps it).
        outputs.append({0: raw, 1: capped, 2: scores, 3: probabilities}[mode])
    return outputs


# ---------------------------------------------------------------------------------- RotaryEmbedding


@converter("RotaryEmbedding")
def rotary_embedding(ctx):
    b = ctx.b
    x, cos, sin, positions = ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3, required=False)
    rank = b.ndim_of(x)
    if rank == 3:
        # (B, S, H * D) -> (B, S, H, D): heads on axis 2, the positions' axis 1 right before.
        heads = _heads_attr(ctx, "num_heads")
        hidden = b.shape_of(x)[2]
        if not isinstance(hidden, int) or hidden % heads:
            raise b.error(f"the hidden size of {b.type_of(x)} must be a known multiple of {heads} heads")
        work = b.call("reshape", x, newshape=[0, 0, heads, hidden // heads])
        heads_axis = 2
    elif rank == 4:
        work, heads_axis = x, 1  # (B, H, S, D)
    else:
        raise b.error(f"the input must be 3-D or 4-D, got {b.type_of(x)}")
    head_size = b.shape_of(work)[3]
    rotated = int(ctx.attr("rotary_embedding_dim", 0)) or head_size
    if not isinstance(rotated, int) or rotated % 2 or (isinstance(head_size, int) and rotated > head_size):
        raise b.error(f"rotary_embedding_dim {rotated} must be even and at most the head size {head_size}")
    if positions is not None:
        cos = b.call("take", cos, positions, axis=0)
        sin = b.call("take", sin, positions, axis=0)
    half = rotated // 2
    if b.shape_of(cos)[-1] != half or b.shape_of(sin)[-1] != half:
        raise b.error(f"the cos / sin caches must have {half} values per position, got {b.type_of(cos)}")
    cos = b.call("expand_dims", cos, axis=heads_axis)  # (B, S, 1, half) or (B, 1, S, half)
    sin = b.call("expand_dims", sin, axis=heads_axis)

    def part(begin, end, stride):
        return b.call("strided_slice", work, begin=[begin], end=[end], strides=[stride], axes=[3])

    interleaved = bool(ctx.attr("interleaved", 0))
    first, second = (
        (part(0, rotated, 2), part(1, rotated, 2)) if interleaved else (part(0, half, 1), part(half, rotated, 1))
    )
    real = b.call("subtract", b.call("multiply", cos, first), b.call("multiply", sin, second))
    imaginary = b.call("add", b.call("multiply", sin, first), b.call("multiply", cos, second))
    if interleaved:
        pairs = b.call("stack", b.tuple([real, imaginary]), axis=4)
        turned = b.call("reshape", pairs, newshape=[0, 0, 0, rotated])
    else:
        turned = b.call("concatenate", b.tuple([real, imaginary]), axis=3)
    if not isinstance(head_size, int) or rotated < head_size:
        turned = b.call("concatenate", b.tuple([turned, part(rotated, head_size, 1)]), axis=3)
    return b.call("reshape_like", turned, x) if rank == 3 else turned


# ---------------------------------------------------------------------------------- SwiGLU, TensorScatter


@converter("SwiGLU")
def swiglu(ctx):
    b = ctx.b
    gate, value = ctx.input(0), ctx.input(1)
    if b.type_of(gate) != b.type_of(value):
        raise b.error(f"A and B must have the same shape and type, got {b.type_of(gate)} and {b.type_of(value)}")
    alpha = float(ctx.attr("alpha", 1.0))
    scaled = gate if alpha == 1.0 else b.call("multiply", gate, _scalar(b, alpha, b.dtype_of(gate)))
    return b.call("multiply", b.call("multiply", gate, b.call("sigmoid", scaled)), value)


@converter("TensorScatter")
def tensor_scatter(ctx):
    b = ctx.b
    cache, update, write_indices = ctx.input(0), ctx.input(1), ctx.input(2, required=False)
    rank = b.ndim_of(cache)
    axis = normalize_axis(ctx, int(ctx.attr("axis", -2)), rank)
    if axis == 0:
        raise b.error("axis cannot be 0 (the batch axis)")
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise b.error(f"mode must be linear or circular, got {mode!r}")
    update_shape = b.static_shape(update, "the update")
    capacity = b.static_shape(cache, "the cache")[axis]
    steps = np.arange(update_shape[axis], dtype="int64").reshape([-1] + [1] * (rank - axis - 1))
    if write_indices is None:
        indices = b.const(steps)
    else:
        starts = b.call("reshape", b.call("cast", write_indices, dtype="int64"), newshape=[-1] + [1] * (rank - 1))
        indices = b.call("add", starts, b.const(steps))
    if mode == "circular":
        indices = b.call("floor_mod", indices, _scalar(b, capacity, "int64"))
    indices = b.call("broadcast_to", indices, shape=update_shape)
    return b.call("scatter_elements", cache, indices, update, axis=axis, reduction="update")
