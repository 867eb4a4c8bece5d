"""reverse_sequence, sliding_window and sparse_to_dense: relations, numpy results against independent references,
builders, the text format, and the interpreter, python and cpp backends."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError, RelayTypeError
from transpile.relay.ty import Any

from op_support import T, rel, rel_error, run

rng = np.random.default_rng(13)




def test_relations():
    x = T((4, 5, 3))
    assert rel("reverse_sequence", x, T((4,), "int64")) == x
    assert rel("reverse_sequence", x, T((Any(),), "int32"), seq_axis=0, batch_axis=-1) == x
    assert rel("sliding_window", T((2, 3, 32, 32)), axis=1, window_shape=(3, 4, 5), strides=(1, 2, 3)) == T(
        (2, 1, 15, 10, 3, 4, 5)
    )
    assert rel("sliding_window", T((Any(), 7)), axis=0, window_shape=(1, 3), strides=(1, 2)) == T((Any(), 3, 1, 3))
    assert rel("sparse_to_dense", T((3, 2), "int64"), T((3,), "int8"), T(()), output_shape=(4, 5)) == T((4, 5), "int8")
    assert rel("sparse_to_dense", T((), "int32"), T(()), T((), "int32"), output_shape=(6,)) == T((6,))


@pytest.mark.parametrize(
    "name, args, attrs, message",
    [
        (
            "reverse_sequence",
            [T((4, 5)), T((5,), "int32")],
            {},
            "seq_lengths size should match with dimension of batch",
        ),
        ("reverse_sequence", [T((4, 5)), T((4,))], {}, "1-D tensor of integers"),
        ("reverse_sequence", [T((4, 5)), T((4,), "int32")], {"seq_axis": 2}, "`seq_axis` in [-data.ndim"),
        ("reverse_sequence", [T((4, 5)), T((4,), "int32")], {"seq_axis": 0}, "must differ"),
        ("sliding_window", [T((4, 5))], {"axis": 2, "window_shape": (1,), "strides": (1,)}, "axis 2 is out of range"),
        ("sliding_window", [T((4, 5))], {"axis": 0, "window_shape": (1,), "strides": (1,)}, "one entry per axis"),
        ("sliding_window", [T((4, 5))], {"axis": 1, "window_shape": (6,), "strides": (1,)}, "does not fit"),
        ("sliding_window", [T((4, 5))], {"axis": 1, "window_shape": (2,), "strides": (0,)}, "must be positive"),
        ("sparse_to_dense", [T((3, 2)), T((3,)), T(())], {"output_shape": (4, 5)}, "tensor of integers"),
        ("sparse_to_dense", [T((3, 2), "int32"), T((2,)), T(())], {"output_shape": (4, 5)}, "a value per index"),
        ("sparse_to_dense", [T((3, 3), "int32"), T((3,)), T(())], {"output_shape": (4, 5)}, "does not index"),
        ("sparse_to_dense", [T((3,), "int32"), T((3,)), T((1,))], {"output_shape": (4,)}, "must be a scalar"),
    ],
)
def test_relation_errors(name, args, attrs, message):
    assert message in rel_error(name, *args, **attrs)


def test_reverse_sequence_error_reads_as_tvms():
    x = relay.var("x", shape=(4, 4), dtype="int32")
    call = relay.reverse_sequence(x, relay.const(np.array([2, 3, 2, 4, 5], "int32")), 1, 0)
    with pytest.raises(RelayTypeError) as info:
        relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x], call)))
    assert "dimension of batch_axis = 4, and seq_length size = 5" in info.value.args[0]


def _reverse_reference(data, lengths, seq_axis, batch_axis):
    out = data.copy()
    for b, length in enumerate(lengths):
        length = min(max(int(length), 0), data.shape[seq_axis])
        for j in range(length):
            target, source = [slice(None)] * data.ndim, [slice(None)] * data.ndim
            target[batch_axis] = source[batch_axis] = b
            target[seq_axis], source[seq_axis] = j, length - 1 - j
            out[tuple(target)] = data[tuple(source)]
    return out


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_reverse_sequence_matches_a_loop(backend):
    data = rng.normal(size=(3, 4, 5)).astype("float32")
    x, s = relay.var("x", shape=data.shape), relay.var("s", shape=(5,), dtype="int64")
    lengths = np.array([4, -1, 0, 2, 9])
    got = run(relay.reverse_sequence(x, s, seq_axis=1, batch_axis=2), [x, s], data, lengths, backend=backend)
    np.testing.assert_array_equal(got, _reverse_reference(data, lengths, 1, 2))


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_sliding_window_matches_slices(backend):
    data = rng.normal(size=(2, 6, 7)).astype("float32")
    x = relay.var("x", shape=data.shape)
    got = run(relay.sliding_window(x, 1, [2, 3], [3, 2]), [x], data, backend=backend)
    assert got.shape == (2, 2, 3, 2, 3)
    for b, i, j in np.ndindex(2, 2, 3):
        np.testing.assert_array_equal(got[b, i, j], data[b, 3 * i : 3 * i + 2, 2 * j : 2 * j + 3])


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_sparse_to_dense_writes_the_last_of_repeated_indices(backend):
    a, b = relay.var("a", shape=(4, 2), dtype="int64"), relay.var("b", shape=(4,), dtype="int32")
    c = relay.var("c", shape=(), dtype="float32")
    indices = np.array([[0, 1], [2, 2], [0, 1], [1, 0]])
    got = run(relay.sparse_to_dense(a, [3, 3], b, c), [a, b, c], indices, np.array([5, 6, 7, 8], "int32"),
              np.float32(-1.9), backend=backend)  # fmt: skip
    np.testing.assert_array_equal(got, [[-1, 7, -1], [8, -1, -1], [-1, -1, 6]])  # -1.9 cast to int32: -1
    scalar = relay.var("i", shape=(), dtype="int32")
    got = run(relay.sparse_to_dense(scalar, (4,), relay.const(2.5)), [scalar], np.int32(3), backend=backend)
    np.testing.assert_array_equal(got, [0, 0, 0, 2.5])  # default_value 0 by default, as in TVM
    with pytest.raises(EvaluationError, match="out of range"):
        run(relay.sparse_to_dense(scalar, (4,), relay.const(2.5)), [scalar], np.int32(4), backend=backend)


# ---------------------------------------------------------------- one program on every backend

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 4, 5), float32], %s: Tensor[(5), int32], %i: Tensor[(3, 2), int32], %v: Tensor[(3), float32]) {
  %0 = reverse_sequence(%x, %s, seq_axis=1, batch_axis=2);
  %1 = sliding_window(%0, axis=1, window_shape=[2, 2], strides=[2, 3]);
  (%1, sparse_to_dense(%i, %v, 0.5f, output_shape=[2, 4]))
}
"""


@pytest.mark.parametrize("backend", ["python", "cpp"])
def test_program_agrees_with_the_interpreter(backend):
    mod = relay.parse(PROGRAM)
    inputs = [rng.normal(size=(3, 4, 5)).astype("float32"), np.array([4, 1, 0, 3, 7], "int32"),
              np.array([[1, 3], [0, 0], [1, 3]], "int32"), np.array([1, 2, 3], "float32")]  # fmt: skip
    want = transpile.compile(mod, backend="interpreter")(*inputs)
    reversed_ = _reverse_reference(inputs[0], inputs[1], 1, 2)
    np.testing.assert_array_equal(want[0][:, 1, 1], reversed_[:, 2:4, 3:5])
    np.testing.assert_array_equal(want[1], [[2, 0.5, 0.5, 0.5], [0.5, 0.5, 0.5, 3]])
    got = transpile.compile(mod, backend=backend)(*inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    if backend == "cpp":
        bad = list(inputs)
        bad[2] = np.array([[1, 3], [2, 0], [0, 0]], "int32")
        with pytest.raises(EvaluationError, match="out of range"):
            transpile.compile(mod, backend=backend)(*bad)


def test_program_text_round_trips():
    mod = relay.transform.InferType()(relay.parse(PROGRAM))
    assert relay.structural_equal(relay.transform.InferType()(relay.parse(mod.astext())), mod)
