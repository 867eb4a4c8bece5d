"""Converters of ONNX operators that carry a recurrent state between calls: LinearAttention, CausalConvWithState.

LinearAttention's recurrence (decay, delta-rule correction, outer-product write, read by the
query heads) runs step by step, unrolled over the statically known sequence length, in float32
as the reference accumulates; CausalConvWithState is a depthwise convolution of the past state
and the input, concatenated.
"""

from __future__ import annotations

import math

import numpy as np

from ..converters import converter
from .attention import split_heads

_UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


def _scalar(b, value, dtype="float32"):
    return b.const(np.array(value, dtype=dtype))


def _as_float32(b, x):
    return x if b.dtype_of(x) == "float32" else b.call("cast", x, dtype="float32")


def _per_step_gate(ctx, gate, heads: int, widths, what: str):
    """A (B, T, heads * w) gate with w in `widths`, as (B, heads_or_1, T, w) float32."""
    b = ctx.b
    if b.ndim_of(gate) != 3:
        raise b.error(f"{what} must be 3-D (B, T, ...), got {b.type_of(gate)}")
    last = b.shape_of(gate)[2]
    for width, gate_heads in widths:
        if last == gate_heads * width:
            gate = b.call("reshape", gate, newshape=[0, 0, gate_heads, width])
            return _as_float32(b, b.call("transpose", gate, axes=[0, 2, 1, 3]))
    raise b.error(f"the last dimension of {what} {b.type_of(gate)} fits none of its layouts")


@converter("LinearAttention")
def linear_attention(ctx):
    b = ctx.b
    query, key, value = ctx.input(0), ctx.input(1), ctx.input(2)
    past_state, decay, beta = ctx.input(3, required=False), ctx.input(4, required=False), ctx.input(5, required=False)
    rule = ctx.attr("update_rule", "gated_delta")
    if rule not in _UPDATE_RULES:
        raise b.error(f"update_rule must be one of {', '.join(_UPDATE_RULES)}, got {rule!r}")
    q_heads, kv_heads = int(ctx.attr("q_num_heads", 0)), int(ctx.attr("kv_num_heads", 0))
    if q_heads <= 0 or kv_heads <= 0 or q_heads % kv_heads:
        raise b.error(f"q_num_heads ({q_heads}) must be a positive multiple of kv_num_heads ({kv_heads})")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gated != (decay is not None) or delta != (beta is not None):
        raise b.error(
            f"update_rule {rule!r} takes {'a' if gated else 'no'} decay and {'a' if delta else 'no'} beta input"
        )
    for name, x in (("query", query), ("key", key), ("value", value)):
        if b.ndim_of(x) != 3:
            raise b.error(f"{name} must be 3-D (B, T, H * D), got {b.type_of(x)}")
    batch, steps, _ = b.static_shape(query, "the query")
    q = _as_float32(b, split_heads(ctx, query, q_heads, "query"))
    k = _as_float32(b, split_heads(ctx, key, kv_heads, "key"))
    v = _as_float32(b, split_heads(ctx, value, kv_heads, "value"))
    key_size, value_size = b.shape_of(q)[3], b.shape_of(v)[3]
    if b.shape_of(k)[3] != key_size:
        raise b.error(f"query and key head sizes differ: {key_size} and {b.shape_of(k)[3]}")
    if gated:
        decay = _per_step_gate(ctx, decay, kv_heads, [(1, kv_heads), (key_size, kv_heads)], "decay")
    if delta:
        beta = _per_step_gate(ctx, beta, kv_heads, [(1, kv_heads), (1, 1)], "beta")
    state_shape = [batch, kv_heads, key_size, value_size]
    if past_state is not None:
        if b.shape_of(past_state) != state_shape:
            raise b.error(f"past_state {b.type_of(past_state)} must have shape {state_shape}")
        state = _as_float32(b, past_state)
    else:
        state = b.const(np.zeros(state_shape, dtype="float32"))
    scale = float(ctx.attr("scale", 0.0)) or 1.0 / math.sqrt(key_size)

    def at(x, t):
        return b.call("take", x, b.const(np.array(t, dtype="int64")), axis=2)

    outputs = []
    for t in range(steps):
        k_t, v_t = at(k, t), at(v, t)
        if gated:
            state = b.call("multiply", state, b.call("expand_dims", b.call("exp", at(decay, t)), axis=3))
        if delta:
            retrieved = b.call("sum", b.call("multiply", state, b.call("expand_dims", k_t, axis=3)), axis=[2])
            v_t = b.call("multiply", at(beta, t), b.call("subtract", v_t, retrieved))
        written = b.call("multiply", b.call("expand_dims", k_t, axis=3), b.call("expand_dims", v_t, axis=2))
        state = b.call("add", state, written)
        read = state if q_heads == kv_heads else b.call("repeat", state, repeats=q_heads // kv_heads, axis=1)
        o_t = b.call("sum", b.call("multiply", b.call("expand_dims", at(q, t), axis=3), read), axis=[2])
        outputs.append(b.call("multiply", o_t, _scalar(b, scale)))
    out = b.call("stack", b.tuple(outputs), axis=1)  # (B, T, H_q, d_v)
    out = b.call("reshape", out, newshape=[batch, steps, q_heads * value_size])
    out_dtype = b.dtype_of(query)
    state_dtype = b.dtype_of(past_state) if past_state is not None else out_dtype
    return [
        out if out_dtype == "float32" else b.call("cast", out, dtype=out_dtype),
        state if state_dtype == "float32" else b.call("cast", state, dtype=state_dtype),
    ]


_ACTIVATIONS = ("none", "silu", "swish")


@converter("CausalConvWithState")
def causal_conv_with_state(ctx):
    b = ctx.b
    x, weight, bias, past = ctx.input(0), ctx.input(1), ctx.input(2, required=False), ctx.input(3, required=False)
    activation = ctx.attr("activation", "none")
    if activation not in _ACTIVATIONS:
        raise b.error(f"activation must be one of {', '.join(_ACTIVATIONS)}, got {activation!r}")
    if b.ndim_of(x) != 3 or b.ndim_of(weight) != 3:
        raise b.error(f"input and weight must be 3-D, got {b.type_of(x)} and {b.type_of(weight)}")
    batch, channels, length = b.static_shape(x, "the input")
    kernel = b.static_shape(weight, "the weight")[2]
    dtype = b.dtype_of(x)
    if past is None:
        past = b.const(np.zeros((batch, channels, kernel - 1), dtype=dtype))
    padded = b.call("concatenate", b.tuple([past, x]), axis=2) if kernel > 1 else x
    out = b.call(
        "nn.conv1d",
        padded,
        weight,
        strides=(1,),
        padding=(0, 0),
        dilation=(1,),
        groups=channels,
        channels=channels,
        kernel_size=(kernel,),
        data_layout="NCW",
        kernel_layout="OIW",
    )
    if bias is not None:
        out = b.call("nn.bias_add", out, bias, axis=1)
    if activation != "none":
        wide = _as_float32(b, out)
        out = b.call("multiply", wide, b.call("sigmoid", wide))
        out = out if dtype == "float32" else b.call("cast", out, dtype=dtype)
    total = length + kernel - 1
    present = b.call("strided_slice", padded, begin=[total - (kernel - 1)], end=[total], strides=[1], axes=[2])
    return [out, present]
