"""Programs with `?` dimensions on the cpp backend: results at several run-time sizes against numpy, the
same results from the interpreter and python backends, and clean errors for arguments that do not fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError, UnsupportedFeatureError

pytest.importorskip("tvm")

BACKENDS = ("cpp", "python", "interpreter")

MLP = """
def @main(%x: Tensor[(?, 12), float32], %w1: Tensor[(20, 12), float32], %b1: Tensor[(20), float32],
          %w2: Tensor[(5, 20), float32], %b2: Tensor[(5), float32]) {
  let %h = nn.relu(nn.bias_add(nn.dense(%x, %w1, units=20), %b1));
  nn.softmax(nn.bias_add(nn.dense(%h, %w2, units=5), %b2))
}"""

# Broadcasting where a `?` dimension may be 1 at run time, reductions over `?` axes, concatenation.
MIXED = """
def @main(%x: Tensor[(?, 4), float32], %y: Tensor[(?, 1), float32], %z: Tensor[(?, 4), float32]) {
  let %s = add(multiply(%x, %y), exp(%z));
  (%s, sum(%x, axis=[0]), mean(%s, axis=[0]), max(%x, axis=[1]), concatenate((%x, %z), axis=0),
   concatenate((%x, %y), axis=1), reshape(%x, newshape=[-1]), transpose(%x))
}"""

# Rows double on every step of a tail-recursive loop: the shape changes from one iteration to the next.
GROW = """
def @grow(%x: Tensor[(?, 2), float32], %n: int32) -> Tensor[(?, 2), float32] {
  if (%n == 0) { %x } else { @grow(concatenate((%x, add(%x, 1f)), axis=0), %n - 1) }
}
def @main(%x: Tensor[(?, 2), float32], %n: int32) -> (Tensor[(?, 2), float32], Tensor[(2), float32]) {
  let %r = @grow(%x, %n);
  (%r, sum(%r, axis=[0]))
}"""


def _compiled(source):
    mod = relay.parse(source)
    return {backend: transpile.compile(mod, backend=backend) for backend in BACKENDS}


@pytest.fixture(scope="module")
def mlp():
    return _compiled(MLP)


@pytest.fixture(scope="module")
def mixed():
    return _compiled(MIXED)


@pytest.fixture(scope="module")
def grow():
    return _compiled(GROW)


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


def _softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _assert_same(found, expected):
    if isinstance(expected, tuple):
        assert isinstance(found, tuple) and len(found) == len(expected)
        for f, e in zip(found, expected):
            _assert_same(f, e)
        return
    assert found.shape == expected.shape and found.dtype == expected.dtype
    np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch", [1, 3, 33])
def test_batch_dynamic_mlp(mlp, backend, batch):
    rng = np.random.default_rng(batch)
    x, w1, b1, w2, b2 = _rand(rng, batch, 12), _rand(rng, 20, 12), _rand(rng, 20), _rand(rng, 5, 20), _rand(rng, 5)
    expected = _softmax(np.maximum(x @ w1.T + b1, 0) @ w2.T + b2)
    _assert_same(mlp[backend](x, w1, b1, w2, b2), expected)


def _mixed_expected(x, y, z):
    s = x * y + np.exp(z)
    wide = np.concatenate((x, y), axis=1)
    return (s, x.sum(axis=0), s.mean(axis=0), x.max(axis=1), np.concatenate((x, z)), wide, x.reshape(-1), x.T)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rows", [1, 2, 9])
def test_broadcast_reduce_concatenate(mixed, backend, rows):
    rng = np.random.default_rng(rows)
    x, y, z = _rand(rng, rows, 4), _rand(rng, rows, 1), _rand(rng, rows, 4)
    _assert_same(mixed[backend](x, y, z), _mixed_expected(x, y, z))


def test_a_dimension_of_one_stretches_at_run_time(mixed):
    """`?` against `?`: y has one row at run time and broadcasts over x's five, as in numpy."""
    rng = np.random.default_rng(7)
    x, y, z = _rand(rng, 5, 4), _rand(rng, 1, 1), _rand(rng, 5, 4)
    # concatenate((x, y), axis=1) needs the rows to agree: here they do not.
    for backend in ("cpp", "interpreter"):
        with pytest.raises(EvaluationError, match="concatenate"):
            mixed[backend](x, y, z)
    # The broadcasting part alone agrees with numpy at several sizes of the stretched dimension.
    single = _compiled(
        "def @main(%x: Tensor[(?, 4), float32], %y: Tensor[(?, 1), float32]) { (add(%x, %y), sum(multiply(%x, %y), axis=[0])) }"
    )
    for rows_x, rows_y in ((5, 1), (1, 3), (4, 4), (0, 1)):
        x, y = _rand(rng, rows_x, 4), _rand(rng, rows_y, 1)
        expected = (x + y, (x * y).sum(axis=0))
        for backend in BACKENDS:
            _assert_same(single[backend](x, y), expected)


def test_empty_dynamic_dimension(mixed):
    x, y, z = (np.zeros((0, 4), "float32"), np.zeros((0, 1), "float32"), np.zeros((0, 4), "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy: mean of an empty slice
        expected = _mixed_expected(x, y, z)
    found = mixed["cpp"](x, y, z)
    assert [f.shape for f in found] == [e.shape for e in expected]
    np.testing.assert_array_equal(found[1], np.zeros(4, "float32"))  # an empty sum is 0
    assert np.isnan(found[2]).all()  # an empty mean is nan, as in numpy


@pytest.mark.parametrize("steps", [0, 1, 4])
def test_shape_changing_tail_recursion(grow, steps):
    x = np.arange(6, dtype="float32").reshape(3, 2)
    expected = x
    for _ in range(steps):
        expected = np.concatenate((expected, expected + 1))
    for backend in BACKENDS:
        _assert_same(grow[backend](x, np.int32(steps)), (expected, expected.sum(axis=0)))


def test_mismatched_runtime_dimensions_are_clean_errors(mixed):
    rng = np.random.default_rng(3)
    x, z = _rand(rng, 5, 4), _rand(rng, 5, 4)
    for backend in ("cpp", "interpreter"):
        with pytest.raises(EvaluationError, match="broadcast"):
            mixed[backend](x, _rand(rng, 3, 1), z)  # 5 rows against 3
    with pytest.raises(EvaluationError, match=r"kernel \w+: concatenate: the inputs' dimension 0 differs.*\(5, 4\)"):
        mixed["cpp"](x, _rand(rng, 1, 1), z)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rank_and_static_dimension_mismatches_are_rejected(mlp, backend):
    rng = np.random.default_rng(4)
    w1, b1, w2, b2 = _rand(rng, 20, 12), _rand(rng, 20), _rand(rng, 5, 20), _rand(rng, 5)
    with pytest.raises(EvaluationError, match=r"Tensor\[\(\?, 12\), float32\]"):
        mlp[backend](_rand(rng, 12), w1, b1, w2, b2)  # rank 1 for rank 2
    with pytest.raises(EvaluationError, match=r"Tensor\[\(\?, 12\), float32\]"):
        mlp[backend](_rand(rng, 4, 11), w1, b1, w2, b2)  # the static dimension differs
    with pytest.raises(EvaluationError, match=r"Tensor\[\(\?, 12\), float32\]"):
        mlp[backend](_rand(rng, 4, 12, 1), w1, b1, w2, b2)


def test_emitted_code_computes_result_shapes_from_argument_shapes():
    source = transpile.emit(relay.parse(MIXED), backend="cpp")
    assert "->shape[0]" in source
    assert "operand dimensions do not broadcast" in source
    assert "Select" not in source and "T." not in source  # printed as C++, not TVMScript


def test_data_dependent_result_shapes_are_unsupported():
    mod = relay.parse("""
def @main(%n: Tensor[(), float32]) {
  arange(0f, %n, 1f, dtype="float32")
}""")
    with pytest.raises(UnsupportedFeatureError, match="arange with a data-dependent output shape"):
        transpile.emit(mod, backend="cpp")


def test_static_result_of_a_dynamic_kernel_in_planned_memory():
    """sum over `?` rows has a static result: it may live in the planned arena, and the kernel's
    broadcast requirement is still checked before it runs."""
    source = """
def @main(%x: Tensor[(?, 4), float32], %y: Tensor[(?, 1), float32], %w: Tensor[(3, 4), float32]) {
  let %s = sum(multiply(%x, %y), axis=[0]);
  let %t = nn.softmax(%s);
  nn.dense(expand_dims(%t, axis=0), %w, units=3)
}"""
    compiled = _compiled(source)
    rng = np.random.default_rng(11)
    w = _rand(rng, 3, 4)
    for rows_x, rows_y in ((6, 6), (2, 1)):
        x, y = _rand(rng, rows_x, 4), _rand(rng, rows_y, 1)
        expected = _softmax((x * y).sum(axis=0))[None, :] @ w.T
        for backend in BACKENDS:
            _assert_same(compiled[backend](x, y, w), expected)
    with pytest.raises(EvaluationError, match="do not broadcast.*argument shapes \\(5, 4\\), \\(3, 1\\)"):
        compiled["cpp"](_rand(rng, 5, 4), _rand(rng, 3, 1), w)
