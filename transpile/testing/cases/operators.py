"""Each operator family: elementwise unary, broadcast binary (incl. integer division), comparisons and
where, reductions, shape transforms, and the nn operators; expectations in hand-written numpy."""

from __future__ import annotations

import numpy as np

from ...backends.base import DYNAMIC_SHAPES
from ..case import Case
from ._numpy_ref import batch_norm, conv2d_nchw, layer_norm, log_softmax, pool2d_nchw, sigmoid, softmax
from ._values import boolean, rand, rand_int

THEME = "operators"

_NN_TOL = {"rtol": 1e-4, "atol": 1e-5}

_A = np.array([-7, 7, -7, 7, -6, 0], dtype="int32")
_B = np.array([2, -2, -2, 2, 3, 5], dtype="int32")


def _trunc_div(a, b):
    return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype)


CASES = [
    # ----- elementwise unary ------------------------------------------------------------------
    Case(
        "unary_exp_log_sqrt",
        """
def @main(%x: Tensor[(2, 3), float32], %p: Tensor[(2, 3), float32]) {
  (exp(%x), log(%p), sqrt(%p), rsqrt(%p))
}""",
        inputs=(rand(21, 2, 3), rand(22, 2, 3, low=0.5, high=2.0)),
        expected=lambda x, p: (np.exp(x), np.log(p), np.sqrt(p), (1 / np.sqrt(p)).astype("float32")),
    ),
    Case(
        "unary_trig_tanh_sigmoid",
        """
def @main(%x: Tensor[(4, 3), float32]) {
  (tanh(%x), sigmoid(%x), sin(%x), cos(%x))
}""",
        inputs=(rand(23, 4, 3, low=-3, high=3),),
        expected=lambda x: (np.tanh(x), sigmoid(x).astype("float32"), np.sin(x), np.cos(x)),
    ),
    Case(
        "unary_rounding_sign",
        """
def @main(%x: Tensor[(8), float32]) {
  (floor(%x), ceil(%x), round(%x), trunc(%x), sign(%x), abs(%x), negative(%x))
}""",
        inputs=(rand(24, 8, low=-4, high=4),),
        expected=lambda x: (np.floor(x), np.ceil(x), np.round(x), np.trunc(x), np.sign(x), np.abs(x), -x),
    ),
    Case(
        "unary_int",
        """
def @main(%x: Tensor[(6), int32]) {
  (abs(%x), negative(%x), sign(%x))
}""",
        inputs=(rand_int(25, 6),),
        expected=lambda x: (np.abs(x), -x, np.sign(x).astype("int32")),
    ),
    # ----- broadcast binary -------------------------------------------------------------------
    Case(
        "broadcast_arithmetic",
        """
def @main(%x: Tensor[(3, 1), float32], %y: Tensor[(1, 4), float32]) {
  (add(%x, %y), subtract(%x, %y), multiply(%x, %y), divide(%x, %y))
}""",
        inputs=(rand(26, 3, 1), rand(27, 1, 4, low=0.5, high=2.0)),
        expected=lambda x, y: (x + y, x - y, x * y, x / y),
    ),
    Case(
        "broadcast_max_min_power",
        """
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) {
  (maximum(%x, %y), minimum(%x, %y), power(%x, %y))
}""",
        inputs=(rand(28, 2, 3, low=0.1, high=2.0), rand(29, 3, low=0.1, high=2.0)),
        expected=lambda x, y: (np.maximum(x, y), np.minimum(x, y), np.power(x, y)),
    ),
    Case(
        "broadcast_scalar_constant",
        """
def @main(%x: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {
  %x * 2f - 0.5f
}""",
        inputs=(rand(30, 2, 2),),
        expected=lambda x: x * np.float32(2) - np.float32(0.5),
    ),
    Case(
        "int_division_semantics",
        """
def @main(%a: Tensor[(6), int32], %b: Tensor[(6), int32]) {
  (divide(%a, %b), mod(%a, %b), floor_divide(%a, %b), floor_mod(%a, %b))
}""",
        inputs=(_A, _B),
        # divide/mod truncate toward zero (C semantics, as TVM); floor_* round toward -infinity.
        expected=lambda a, b: (_trunc_div(a, b), a - b * _trunc_div(a, b), np.floor_divide(a, b), np.mod(a, b)),
        description="Relay integer divide truncates toward zero, unlike numpy's //",
    ),
    # ----- comparisons, logic, where ----------------------------------------------------------
    Case(
        "comparisons",
        """
def @main(%x: Tensor[(6), int32], %y: Tensor[(6), int32]) {
  (less(%x, %y), greater_equal(%x, %y), equal(%x, %y), not_equal(%x, %y))
}""",
        inputs=(np.array([1, 2, 3, 4, 5, 6], "int32"), np.array([6, 2, 1, 4, 9, 0], "int32")),
        expected=lambda x, y: (x < y, x >= y, x == y, x != y),
    ),
    Case(
        "logical_ops",
        """
def @main(%a: Tensor[(4), bool], %b: Tensor[(4), bool]) {
  (logical_and(%a, %b), logical_or(%a, %b), logical_not(%a), logical_xor(%a, %b))
}""",
        inputs=(boolean([True, True, False, False]), boolean([True, False, True, False])),
        expected=lambda a, b: (a & b, a | b, ~a, a ^ b),
    ),
    Case(
        "where_select",
        """
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32], %c: Tensor[(3), bool]) {
  (where(greater(%x, %y), %x, %y), where(%c, %x, 0f))
}""",
        inputs=(rand(31, 2, 3), rand(32, 2, 3), boolean([True, False, True])),
        expected=lambda x, y, c: (np.where(x > y, x, y), np.where(c, x, np.float32(0))),
    ),
    Case(
        "cast_and_clip",
        """
def @main(%x: Tensor[(5), float32], %n: Tensor[(5), int32]) {
  (cast(%x, dtype="int32"), cast(%n, dtype="float32"), clip(%x, a_min=-0.5f, a_max=0.5f))
}""",
        inputs=(rand(33, 5, low=-3, high=3), rand_int(34, 5)),
        expected=lambda x, n: (np.trunc(x).astype("int32"), n.astype("float32"), np.clip(x, -0.5, 0.5)),
    ),
    # ----- reductions -------------------------------------------------------------------------
    Case(
        "reduce_sum_mean",
        """
def @main(%x: Tensor[(2, 3, 4), float32]) {
  (sum(%x, axis=[1], keepdims=True), sum(%x), mean(%x, axis=[0, 2]), sum(%x, axis=[1], exclude=True))
}""",
        inputs=(rand(35, 2, 3, 4),),
        expected=lambda x: (
            x.sum(axis=1, keepdims=True),
            np.asarray(x.sum(), "float32"),
            x.mean(axis=(0, 2)),
            x.sum(axis=(0, 2)),
        ),
    ),
    Case(
        "reduce_max_min_prod",
        """
def @main(%x: Tensor[(3, 4), float32]) {
  (max(%x, axis=[0]), min(%x, axis=[-1], keepdims=True), prod(%x, axis=[1]))
}""",
        inputs=(rand(36, 3, 4, low=0.5, high=1.5),),
        expected=lambda x: (x.max(axis=0), x.min(axis=-1, keepdims=True), x.prod(axis=1)),
    ),
    Case(
        "reduce_all_any_int_sum",
        """
def @main(%b: Tensor[(2, 3), bool], %n: Tensor[(2, 3), int32]) {
  (all(%b, axis=[1]), any(%b, axis=[0]), sum(%n, axis=[0]))
}""",
        inputs=(boolean([[True, True, True], [True, False, False]]), rand_int(37, 2, 3)),
        expected=lambda b, n: (b.all(axis=1), b.any(axis=0), n.sum(axis=0).astype("int32")),
    ),
    # ----- shape transforms -------------------------------------------------------------------
    Case(
        "reshape_special_values",
        """
def @main(%x: Tensor[(2, 3, 4), float32]) {
  (reshape(%x, newshape=[3, -1]), reshape(%x, newshape=[0, -1]), reshape(%x, newshape=[24]))
}""",
        inputs=(rand(38, 2, 3, 4),),
        expected=lambda x: (x.reshape(3, 8), x.reshape(2, 12), x.reshape(24)),
    ),
    Case(
        "transpose",
        """
def @main(%x: Tensor[(2, 3, 4), float32]) {
  (transpose(%x, axes=[2, 0, 1]), transpose(%x))
}""",
        inputs=(rand(39, 2, 3, 4),),
        expected=lambda x: (x.transpose(2, 0, 1), x.transpose()),
    ),
    Case(
        "concatenate_stack",
        """
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 1), float32]) {
  (concatenate((%x, %y), axis=1), stack((%x, %x), axis=0), concatenate((%x, %x)))
}""",
        inputs=(rand(40, 2, 3), rand(41, 2, 1)),
        expected=lambda x, y: (np.concatenate([x, y], axis=1), np.stack([x, x]), np.concatenate([x, x])),
    ),
    Case(
        "split",
        """
def @main(%x: Tensor[(2, 6), float32]) {
  let %thirds = split(%x, indices_or_sections=3, axis=1);
  let %parts = split(%x, indices_or_sections=[1, 4], axis=1);
  (%thirds.0, %thirds.2, %parts.1, %parts.2)
}""",
        inputs=(rand(42, 2, 6),),
        expected=lambda x: (x[:, 0:2], x[:, 4:6], x[:, 1:4], x[:, 4:6]),
    ),
    Case(
        "strided_slice",
        """
def @main(%x: Tensor[(3, 5), float32]) {
  (strided_slice(%x, begin=[0, 1], end=[2, 4], strides=[1, 2]), strided_slice(%x, begin=[1], end=[3]))
}""",
        inputs=(rand(43, 3, 5),),
        expected=lambda x: (x[0:2, 1:4:2], x[1:3]),
    ),
    Case(
        "take",
        """
def @main(%x: Tensor[(3, 4), float32], %i: Tensor[(2), int32]) {
  (take(%x, %i, axis=1), take(%x, %i), take(%x, 2, axis=0))
}""",
        inputs=(rand(44, 3, 4), np.array([2, 0], "int32")),
        expected=lambda x, i: (x[:, i], x.reshape(-1)[i], x[2]),
    ),
    Case(
        "expand_squeeze_broadcast_repeat",
        """
def @main(%x: Tensor[(1, 4), float32]) {
  (expand_dims(%x, axis=1), squeeze(%x, axis=[0]), broadcast_to(%x, shape=[3, 4]), repeat(%x, repeats=2, axis=0))
}""",
        inputs=(rand(45, 1, 4),),
        expected=lambda x: (x[:, None, :], x[0], np.broadcast_to(x, (3, 4)).copy(), np.repeat(x, 2, axis=0)),
    ),
    Case(
        "dynamic_rows",
        """
def @main(%x: Tensor[(?, 3), float32], %w: Tensor[(3), float32]) -> (Tensor[(3), float32], Tensor[(?, 3), float32]) {
  (sum(%x, axis=[0]), multiply(%x, %w))
}""",
        inputs=(rand(62, 5, 3), rand(63, 3)),
        expected=lambda x, w: (x.sum(axis=0), x * w),
        features={DYNAMIC_SHAPES},
        description="a dimension known only at run time (`?`)",
    ),
    # ----- nn ---------------------------------------------------------------------------------
    Case(
        "nn_dense_bias_relu",
        """
def @main(%x: Tensor[(2, 5), float32], %w: Tensor[(3, 5), float32], %b: Tensor[(3), float32]) {
  nn.relu(nn.bias_add(nn.dense(%x, %w, units=3), %b))
}""",
        inputs=(rand(46, 2, 5), rand(47, 3, 5), rand(48, 3)),
        expected=lambda x, w, b: np.maximum(x @ w.T + b, 0),
        **_NN_TOL,
    ),
    Case(
        "nn_conv2d",
        """
def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), float32]) {
  (nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=3, kernel_size=[3, 3]),
   nn.conv2d(%x, %w, strides=[2, 2], channels=3, kernel_size=[3, 3]))
}""",
        inputs=(rand(49, 1, 2, 5, 5), rand(50, 3, 2, 3, 3)),
        expected=lambda x, w: (conv2d_nchw(x, w, 1, 1), conv2d_nchw(x, w, 2, 0)),
        **_NN_TOL,
    ),
    Case(
        "nn_pools",
        """
def @main(%x: Tensor[(1, 2, 4, 6), float32]) {
  (nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]), nn.avg_pool2d(%x, pool_size=[2, 2], strides=[1, 1]),
   nn.global_avg_pool2d(%x))
}""",
        inputs=(rand(51, 1, 2, 4, 6),),
        expected=lambda x: (
            pool2d_nchw(x, 2, 2, "max"),
            pool2d_nchw(x, 2, 1, "avg"),
            x.mean(axis=(2, 3), keepdims=True),
        ),
        **_NN_TOL,
    ),
    Case(
        "nn_softmax",
        """
def @main(%x: Tensor[(3, 5), float32]) {
  (nn.softmax(%x), nn.log_softmax(%x), nn.softmax(%x, axis=0))
}""",
        inputs=(rand(52, 3, 5, low=-4, high=4),),
        expected=lambda x: (softmax(x), log_softmax(x), softmax(x, axis=0)),
        **_NN_TOL,
    ),
    Case(
        "nn_batch_norm",
        """
def @main(%x: Tensor[(2, 3, 2, 2), float32], %gamma: Tensor[(3), float32], %beta: Tensor[(3), float32],
          %mean: Tensor[(3), float32], %var: Tensor[(3), float32]) {
  let %bn = nn.batch_norm(%x, %gamma, %beta, %mean, %var);
  %bn.0
}""",
        inputs=(rand(53, 2, 3, 2, 2), rand(54, 3), rand(55, 3), rand(56, 3), rand(57, 3, low=0.5, high=1.5)),
        expected=batch_norm,
        **_NN_TOL,
    ),
    Case(
        "nn_layer_norm",
        """
def @main(%x: Tensor[(2, 6), float32], %gamma: Tensor[(6), float32], %beta: Tensor[(6), float32]) {
  nn.layer_norm(%x, %gamma, %beta)
}""",
        inputs=(rand(58, 2, 6), rand(59, 6), rand(60, 6)),
        expected=layer_norm,
        **_NN_TOL,
    ),
    Case(
        "nn_pad_flatten_leaky_relu",
        """
def @main(%x: Tensor[(2, 2, 3), float32]) {
  (nn.pad(%x, 0f, pad_width=[[0, 0], [1, 0], [0, 2]]), nn.batch_flatten(%x), nn.leaky_relu(%x, alpha=0.1f))
}""",
        inputs=(rand(61, 2, 2, 3),),
        expected=lambda x: (
            np.pad(x, ((0, 0), (1, 0), (0, 2))),
            x.reshape(2, 6),
            np.where(x > 0, x, x * np.float32(0.1)),
        ),
    ),
    Case(
        "int32_wraps_around",
        """
def @main(%x: Tensor[(2), int32]) -> Tensor[(2), int32] {
  %x * 2 + 1
}""",
        inputs=(np.array([2**30, -(2**30) - 1], dtype="int32"),),
        expected=np.array([-(2**31) + 1, 2**31 - 1], dtype="int32"),
        description="int32 arithmetic wraps modulo 2**32 (no error, no promotion)",
    ),
]
