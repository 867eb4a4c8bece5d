"""Converters of ONNX recurrent layers (RNN, GRU, LSTM), unrolled over the static sequence length.

Each direction projects the whole input sequence through W in one dense product, then runs one
cell step per time step on registry operators. `sequence_lens` (constant or not) masks the steps
past each batch entry's length: its state is carried through unchanged and its output is zero,
which is ONNX's semantics for both directions (a reverse pass starts at the entry's last step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..converters import converter
from .activation import softplus_of

_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
# Activation name -> (uses alpha, uses beta, default alpha, default beta).
_ACTIVATION_PARAMS = {
    "Relu": (False, False, None, None),
    "Tanh": (False, False, None, None),
    "Sigmoid": (False, False, None, None),
    "Softsign": (False, False, None, None),
    "Softplus": (False, False, None, None),
    "Affine": (True, True, 1.0, 0.0),
    "LeakyRelu": (True, False, 0.01, None),
    "ThresholdedRelu": (True, False, 1.0, None),
    "ScaledTanh": (True, True, 1.0, 1.0),
    "HardSigmoid": (True, True, 0.2, 0.5),
    "Elu": (True, False, 1.0, None),
}


def _activation(ctx, name: str, alpha, beta) -> Callable:
    b = ctx.b

    def scalar(value, like):
        return b.const(np.array(value, dtype=b.dtype_of(like)))

    def apply(x):
        if name == "Relu":
            return b.call("nn.relu", x)
        if name == "Tanh":
            return b.call("tanh", x)
        if name == "Sigmoid":
            return b.call("sigmoid", x)
        if name == "Softsign":
            return b.call("divide", x, b.call("add", scalar(1, x), b.call("abs", x)))
        if name == "Softplus":
            return softplus_of(ctx, x)
        if name == "Affine":
            return b.call("add", b.call("multiply", x, scalar(alpha, x)), scalar(beta, x))
        if name == "LeakyRelu":
            return b.call("nn.leaky_relu", x, alpha=alpha)
        if name == "ThresholdedRelu":
            return b.call("where", b.call("greater", x, scalar(alpha, x)), x, scalar(0, x))
        if name == "ScaledTanh":
            return b.call("multiply", scalar(alpha, x), b.call("tanh", b.call("multiply", x, scalar(beta, x))))
        if name == "HardSigmoid":
            linear = b.call("add", b.call("multiply", x, scalar(alpha, x)), scalar(beta, x))
            return b.call("clip", linear, a_min=0.0, a_max=1.0)
        # Elu
        negative = b.call("multiply", scalar(alpha, x), b.call("subtract", b.call("exp", x), scalar(1, x)))
        return b.call("where", b.call("less", x, scalar(0, x)), negative, x)

    return apply


def _activations(ctx, kind: str, directions: int) -> list[list[Callable]]:
    """Per direction, the cell's activation functions (f, g[, h]) with their alpha / beta."""
    per_direction = len(_DEFAULT_ACTIVATIONS[kind])
    names = ctx.attr("activations")
    if names is None:
        names = _DEFAULT_ACTIVATIONS[kind] * directions
    if len(names) != per_direction * directions:
        raise ctx.b.error(f"activations must list {per_direction * directions} functions, got {names}")
    alphas = list(ctx.attr("activation_alpha", []) or [])
    betas = list(ctx.attr("activation_beta", []) or [])
    functions = []
    for name in names:
        canonical = next((k for k in _ACTIVATION_PARAMS if k.lower() == name.lower()), None)
        if canonical is None:
            raise ctx.unsupported(f"activation function {name!r}")
        uses_alpha, uses_beta, alpha, beta = _ACTIVATION_PARAMS[canonical]
        # The alpha / beta lists are consumed in order by the functions that take them.
        if uses_alpha and alphas:
            alpha = float(alphas.pop(0))
        if uses_beta and betas:
            beta = float(betas.pop(0))
        functions.append(_activation(ctx, canonical, alpha, beta))
    return [functions[d * per_direction : (d + 1) * per_direction] for d in range(directions)]


@dataclass
class Direction:
    """One direction's weights (constant-folded slices of W, R, B, P) and initial state."""

    w: object  # (G*H, I)
    r: object  # (G*H, H)
    w_bias: object | None  # (G*H,)
    r_bias: object | None
    peephole: object | None  # (3H,) for LSTM: i, o, f
    h0: object  # (batch, H)
    c0: object | None
    functions: list
    reverse: bool


def _direction_slice(ctx, value, d: int):
    return ctx.b.call(
        "squeeze", ctx.b.call("strided_slice", value, begin=(d,), end=(d + 1,), strides=(1,), axes=(0,)), axis=(0,)
    )


def _gates(ctx, value, count: int) -> list:
    if count == 1:
        return [value]
    parts = ctx.b.call("split", value, indices_or_sections=count, axis=-1)
    return [ctx.b.get(parts, i) for i in range(count)]


def _recurrent(ctx, kind: str):
    b = ctx.b
    x = ctx.input(0)
    h0 = ctx.input(5, required=False)
    c0 = ctx.input(6, required=False) if kind == "LSTM" else None
    layout = int(ctx.attr("layout", 0)) if ctx.opset >= 14 else 0
    if b.ndim_of(x) != 3:
        raise b.error(f"X must be 3-D, got {b.type_of(x)}")
    if layout:
        # Batch-major tensors become time-major here and go back at the end.
        x = b.call("transpose", x, axes=(1, 0, 2))
        h0 = None if h0 is None else b.call("transpose", h0, axes=(1, 0, 2))
        c0 = None if c0 is None else b.call("transpose", c0, axes=(1, 0, 2))
    steps = b.shape_of(x)[0]
    if not isinstance(steps, int):
        raise b.error(
            f"{kind} is unrolled over the sequence, whose length must be known at import: X is {b.type_of(x)}"
        )
    masks = _step_masks(ctx, ctx.input(4, required=False), steps)
    cell = {"RNN": _rnn_cell, "GRU": _gru_cell, "LSTM": _lstm_cell}[kind]
    outputs, final_h, final_c = [], [], []
    for state in _directions(ctx, kind, x, h0, c0):
        y, h, c = _unroll(ctx, state, cell, x, steps, masks)
        outputs.append(y)
        final_h.append(h)
        final_c.append(c)
    y = b.call("stack", outputs, axis=1)  # (seq, directions, batch, hidden)
    y_h = b.call("stack", final_h, axis=0)
    y_c = b.call("stack", final_c, axis=0) if kind == "LSTM" else None
    if layout:
        y = b.call("transpose", y, axes=(2, 0, 1, 3))
        y_h = b.call("transpose", y_h, axes=(1, 0, 2))
        y_c = None if y_c is None else b.call("transpose", y_c, axes=(1, 0, 2))
    return [y, y_h] + ([y_c] if kind == "LSTM" else [])


def _directions(ctx, kind: str, x, h0, c0) -> list[Direction]:
    """The weights and initial states of each direction (time-major x, h0, c0)."""
    b = ctx.b
    w, r = ctx.input(1), ctx.input(2)
    bias = ctx.input(3, required=False)
    peepholes = ctx.input(7, required=False) if kind == "LSTM" else None
    batch = b.shape_of(x)[1]
    hidden = int(ctx.attr("hidden_size", b.shape_of(r)[-1]))
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise b.error(f"direction must be forward, reverse or bidirectional, got {direction!r}")
    count = 2 if direction == "bidirectional" else 1
    if b.shape_of(w)[0] != count:
        raise b.error(f"W {b.type_of(w)} must have {count} direction(s) for direction={direction}")
    zeros = b.const(np.zeros((batch, hidden), dtype=b.dtype_of(x))) if isinstance(batch, int) else None
    if zeros is None and (h0 is None or (kind == "LSTM" and c0 is None)):
        raise b.error(f"without initial states the batch size of X {b.type_of(x)} must be known at import")
    functions = _activations(ctx, kind, count)
    directions = []
    for d in range(count):
        w_bias = r_bias = None
        if bias is not None:
            halves = b.call("split", _direction_slice(ctx, bias, d), indices_or_sections=2, axis=0)
            w_bias, r_bias = b.get(halves, 0), b.get(halves, 1)
        directions.append(
            Direction(
                w=_direction_slice(ctx, w, d),
                r=_direction_slice(ctx, r, d),
                w_bias=w_bias,
                r_bias=r_bias,
                peephole=_direction_slice(ctx, peepholes, d) if peepholes is not None else None,
                h0=_direction_slice(ctx, h0, d) if h0 is not None else zeros,
                c0=(_direction_slice(ctx, c0, d) if c0 is not None else zeros) if kind == "LSTM" else None,
                functions=functions[d],
                reverse=direction == "reverse" or d == 1,
            )
        )
    return directions


def _unroll(ctx, state: Direction, cell, x, steps: int, masks):
    """One direction over the sequence: (Y (seq, batch, hidden), last H, last C)."""
    b = ctx.b
    # The input's share of every gate at every step, in one product.
    projected = b.call("nn.dense", x, state.w, units=b.shape_of(state.w)[0])
    if state.w_bias is not None:
        projected = b.call("add", projected, state.w_bias)
    h, c = state.h0, state.c0
    per_step = [None] * steps
    for t in range(steps - 1, -1, -1) if state.reverse else range(steps):
        new_h, new_c = cell(ctx, state, _time_step(ctx, projected, t), h, c, ctx.attr("clip"))
        if masks is not None:
            keep = masks[t]
            per_step[t] = b.call("where", keep, new_h, b.call("zeros_like", new_h))
            new_h = b.call("where", keep, new_h, h)
            new_c = None if c is None else b.call("where", keep, new_c, c)
        else:
            per_step[t] = new_h
        h, c = new_h, new_c
    return b.call("stack", per_step, axis=0), h, c


def _step_masks(ctx, lengths, steps: int):
    """Per step, a (batch, 1) bool tensor: is the step inside the entry's sequence? None when all are."""
    b = ctx.b
    if lengths is None:
        return None
    known = b.value_of(lengths)
    if known is not None and np.all(np.asarray(known) == steps):
        return None
    lengths = b.call("expand_dims", b.call("cast", lengths, dtype="int64"), axis=1)
    return [b.call("less", b.const(np.array(t, dtype="int64")), lengths) for t in range(steps)]


def _time_step(ctx, sequence, t: int):
    b = ctx.b
    return b.call(
        "squeeze", b.call("strided_slice", sequence, begin=(t,), end=(t + 1,), strides=(1,), axes=(0,)), axis=(0,)
    )


def _clipped(ctx, value, clip):
    if clip is None:
        return value
    return ctx.b.call("clip", value, a_min=-float(clip), a_max=float(clip))


def _rows(ctx, value, start: int, stop: int):
    """Rows start:stop of a weight (or entries of a bias): the weights of some gates."""
    if value is None:
        return None
    return ctx.b.call("strided_slice", value, begin=(start,), end=(stop,), strides=(1,), axes=(0,))


def _recurrent_term(ctx, h, weight, bias):
    """h R^T + Rb for the gates whose rows `weight` holds."""
    b = ctx.b
    out = b.call("nn.dense", h, weight, units=b.shape_of(weight)[0])
    return out if bias is None else b.call("add", out, bias)


def _rnn_cell(ctx, state: Direction, x_t, h, c, clip):
    (f,) = state.functions
    recurrent = _recurrent_term(ctx, h, state.r, state.r_bias)
    return f(_clipped(ctx, ctx.b.call("add", x_t, recurrent), clip)), None


def _gru_cell(ctx, state: Direction, x_t, h, c, clip):
    b = ctx.b
    f, g = state.functions
    hidden = b.shape_of(state.r)[1]
    xz, xr, xh = _gates(ctx, x_t, 3)
    rz, rr = _gates(
        ctx, _recurrent_term(ctx, h, _rows(ctx, state.r, 0, 2 * hidden), _rows(ctx, state.r_bias, 0, 2 * hidden)), 2
    )
    z = f(_clipped(ctx, b.call("add", xz, rz), clip))
    reset = f(_clipped(ctx, b.call("add", xr, rr), clip))
    weight_h = _rows(ctx, state.r, 2 * hidden, 3 * hidden)
    bias_h = _rows(ctx, state.r_bias, 2 * hidden, 3 * hidden)
    if ctx.attr("linear_before_reset", 0):
        candidate = b.call("multiply", reset, _recurrent_term(ctx, h, weight_h, bias_h))
    else:
        candidate = _recurrent_term(ctx, b.call("multiply", reset, h), weight_h, bias_h)
    h_candidate = g(_clipped(ctx, b.call("add", xh, candidate), clip))
    one = b.const(np.array(1, dtype=b.dtype_of(z)))
    new_h = b.call("add", b.call("multiply", b.call("subtract", one, z), h_candidate), b.call("multiply", z, h))
    return new_h, None


def _lstm_cell(ctx, state: Direction, x_t, h, c, clip):
    b = ctx.b
    f, g, act_h = state.functions
    recurrent = _recurrent_term(ctx, h, state.r, state.r_bias)
    pre_i, pre_o, pre_f, pre_c = _gates(ctx, b.call("add", x_t, recurrent), 4)
    if state.peephole is not None:
        p_i, p_o, p_f = _gates(ctx, state.peephole, 3)
        pre_i = b.call("add", pre_i, b.call("multiply", p_i, c))
        pre_f = b.call("add", pre_f, b.call("multiply", p_f, c))
    gate_i = f(_clipped(ctx, pre_i, clip))
    if ctx.attr("input_forget", 0):
        # Coupled gates: what is let in is forgotten.
        gate_f = b.call("subtract", b.const(np.array(1, dtype=b.dtype_of(gate_i))), gate_i)
    else:
        gate_f = f(_clipped(ctx, pre_f, clip))
    cell_in = g(_clipped(ctx, pre_c, clip))
    new_c = b.call("add", b.call("multiply", gate_f, c), b.call("multiply", gate_i, cell_in))
    if state.peephole is not None:
        pre_o = b.call("add", pre_o, b.call("multiply", p_o, new_c))
    gate_o = f(_clipped(ctx, pre_o, clip))
    return b.call("multiply", gate_o, act_h(new_c)), new_c


@converter("RNN")
def rnn(ctx):
    return _recurrent(ctx, "RNN")


@converter("GRU")
def gru(ctx):
    return _recurrent(ctx, "GRU")


@converter("LSTM")
def lstm(ctx):
    return _recurrent(ctx, "LSTM")
