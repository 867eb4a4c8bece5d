"""Small whole models with numpy expectations: MLPs, a CNN, and an RNN cell folded over a List of inputs."""

from __future__ import annotations

import numpy as np

from ...backends.base import ADTS, CLOSURES, POLYMORPHISM, RECURSION
from ..case import Case
from ._numpy_ref import conv2d_nchw, pool2d_nchw, softmax
from ._values import plist, rand

THEME = "models"

_TOL = {"rtol": 1e-4, "atol": 1e-5}


def _mlp(x, w1, b1, w2, b2):
    hidden = np.maximum(x @ w1.T + b1, 0)
    return softmax(hidden @ w2.T + b2)


def _dense_relu_chain(x, weights):
    for w in weights:
        x = np.maximum(x @ w.T, 0)
    return x


def _cnn(x, w, b, wd, bd):
    conv = conv2d_nchw(x, w, 1, 1) + b.reshape(1, -1, 1, 1)
    pooled = pool2d_nchw(np.maximum(conv, 0), 2, 2, "max")
    return pooled.reshape(1, -1) @ wd.T + bd


def _rnn(xs, h, wx, wh, b):
    while xs.constructor == "Cons":
        x, xs = xs.fields
        h = np.tanh(x @ wx.T + h @ wh.T + b)
    return h


CASES = [
    Case(
        "mlp",
        """
def @main(%x: Tensor[(1, 8), float32], %w1: Tensor[(16, 8), float32], %b1: Tensor[(16), float32],
          %w2: Tensor[(4, 16), float32], %b2: Tensor[(4), float32]) -> Tensor[(1, 4), float32] {
  let %h = nn.relu(nn.bias_add(nn.dense(%x, %w1, units=16), %b1));
  nn.softmax(nn.bias_add(nn.dense(%h, %w2, units=4), %b2))
}""",
        inputs=(rand(101, 1, 8), rand(102, 16, 8), rand(103, 16), rand(104, 4, 16), rand(105, 4)),
        expected=_mlp,
        **_TOL,
    ),
    Case(
        "mlp_layers_as_globals",
        """
def @layer(%x: Tensor[(2, 6), float32], %w: Tensor[(6, 6), float32], %b: Tensor[(6), float32]) -> Tensor[(2, 6), float32] {
  nn.relu(add(nn.dense(%x, %w, units=6), %b))
}

def @main(%x: Tensor[(2, 6), float32], %w: Tensor[(6, 6), float32], %b: Tensor[(6), float32]) -> Tensor[(2, 6), float32] {
  @layer(@layer(%x, %w, %b), %w, %b)
}""",
        inputs=(rand(106, 2, 6), rand(107, 6, 6), rand(108, 6)),
        expected=lambda x, w, b: np.maximum(np.maximum(x @ w.T + b, 0) @ w.T + b, 0),
        **_TOL,
    ),
    Case(
        "one_kernel_called_many_times",
        """
def @block(%x: Tensor[(2, 4), float32], %w: Tensor[(4, 4), float32]) -> Tensor[(2, 4), float32] {
  nn.relu(nn.dense(nn.relu(nn.dense(%x, %w, units=4)), %w, units=4))
}

def @main(%x: Tensor[(2, 4), float32], %w1: Tensor[(4, 4), float32], %w2: Tensor[(4, 4), float32]) -> Tensor[(2, 4), float32] {
  let %h = nn.relu(nn.dense(nn.relu(nn.dense(%x, %w1, units=4)), %w2, units=4));
  @block(nn.relu(nn.dense(%h, %w1, units=4)), %w2)
}""",
        inputs=(rand(124, 2, 4), rand(125, 4, 4), rand(126, 4, 4)),
        expected=lambda x, w1, w2: _dense_relu_chain(x, [w1, w2, w1, w2, w2]),
        description="every dense+relu has the same shapes: one fused kernel, called three times in @main "
        "and twice in @block (as real CNNs call theirs)",
        **_TOL,
    ),
    Case(
        "cnn",
        """
def @main(%x: Tensor[(1, 1, 8, 8), float32], %w: Tensor[(4, 1, 3, 3), float32], %b: Tensor[(4), float32],
          %wd: Tensor[(10, 64), float32], %bd: Tensor[(10), float32]) -> Tensor[(1, 10), float32] {
  let %conv = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  let %act = nn.relu(nn.bias_add(%conv, %b));
  let %pool = nn.max_pool2d(%act, pool_size=[2, 2], strides=[2, 2]);
  nn.bias_add(nn.dense(nn.batch_flatten(%pool), %wd, units=10), %bd)
}""",
        inputs=(rand(109, 1, 1, 8, 8), rand(110, 4, 1, 3, 3), rand(111, 4), rand(112, 10, 64), rand(113, 10)),
        expected=_cnn,
        **_TOL,
    ),
    Case(
        "rnn_cell_folded_over_list",
        """
def @main(%xs: List[Tensor[(1, 4), float32]], %h0: Tensor[(1, 3), float32], %wx: Tensor[(3, 4), float32],
          %wh: Tensor[(3, 3), float32], %b: Tensor[(3), float32]) -> Tensor[(1, 3), float32] {
  let %cell = fn (%h: Tensor[(1, 3), float32], %x: Tensor[(1, 4), float32]) -> Tensor[(1, 3), float32] {
    tanh(add(add(nn.dense(%x, %wx, units=3), nn.dense(%h, %wh, units=3)), %b))
  };
  @foldl(%cell, %h0, %xs)
}""",
        prelude=True,
        inputs=(
            plist([rand(114 + i, 1, 4) for i in range(5)]),
            rand(120, 1, 3),
            rand(121, 3, 4),
            rand(122, 3, 3),
            rand(123, 3),
        ),
        expected=_rnn,
        features={ADTS, CLOSURES, POLYMORPHISM, RECURSION},
        **_TOL,
    ),
]
