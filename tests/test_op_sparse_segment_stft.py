"""sparse_reshape, segment_sum, stft, strided_set, mean_variance / mean_std: relations, numpy results against
independent references (numpy, torch), builders, the text format, and the interpreter, python and cpp backends."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError, RelayTypeError, UnsupportedFeatureError
from transpile.relay.ty import Any, TupleType

from op_support import T, rel, rel_error, run

rng = np.random.default_rng(5)




# ---------------------------------------------------------------- relations


def test_relations():
    i64 = "int64"
    assert rel("sparse_reshape", T((5, 3), i64), T((3,), i64), T((2,), "int32")) == TupleType(
        [T((5, 2), i64), T((2,), "int32")]
    )
    assert rel("sparse_reshape", T((Any(), Any()), "int32"), T((Any(),), "int32"), T((Any(),), "int32")) == TupleType(
        [T((Any(), Any()), "int32"), T((Any(),), "int32")]
    )
    assert rel("stft", T((2, 20)), T((6,), "int32"), n_fft=8, hop_length=3, win_length=6) == T((2, 5, 5, 2))
    assert rel("stft", T((20,), "float64"), T((8,)), n_fft=8, hop_length=4, win_length=8, onesided=False) == T(
        (8, 4, 2), "float64"
    )
    assert rel("stft", T((Any(), Any())), T((Any(),)), n_fft=4, hop_length=1, win_length=4) == T((Any(), 3, Any(), 2))
    data = T((3, 4, 5))
    assert rel("strided_set", data, T((1, 2, 5)), T((3,), "int32"), T((2,), "int64"), T((Any(),), "int32")) == data


@pytest.mark.parametrize(
    "name, args, attrs, message",
    [
        (
            "sparse_reshape",
            [T((5, 3)), T((3,), "int64"), T((2,), "int64")],
            {},
            "sparse_indices must be a tensor of signed",
        ),
        ("sparse_reshape", [T((5,), "int64"), T((3,), "int64"), T((2,), "int64")], {}, "must be a 2-D tensor"),
        ("sparse_reshape", [T((5, 3), "int64"), T((2,), "int64"), T((2,), "int64")], {}, "one column per dimension"),
        ("sparse_reshape", [T((5, 3), "int64"), T((3,), "uint8"), T((2,), "int64")], {}, "prev_shape must be"),
        ("stft", [T((2, 20), "int32"), T((6,))], {"n_fft": 8, "hop_length": 3, "win_length": 6}, "float signals"),
        ("stft", [T((2, 2, 20)), T((6,))], {"n_fft": 8, "hop_length": 3, "win_length": 6}, "float signals"),
        ("stft", [T((20,)), T((6,))], {}, "n_fft and hop_length must be positive"),
        (
            "stft",
            [T((20,)), T((9,))],
            {"n_fft": 8, "hop_length": 3, "win_length": 9},
            "win_length must be in [1, n_fft=8]",
        ),
        ("stft", [T((20,)), T((5,))], {"n_fft": 8, "hop_length": 3, "win_length": 6}, "must hold win_length=6"),
        ("stft", [T((7,)), T((6,))], {"n_fft": 8, "hop_length": 3, "win_length": 6}, "shorter than n_fft=8"),
        (
            "strided_set",
            [T((3, 4)), T((3,)), T((1,), "int32"), T((1,), "int32"), T((1,), "int32")],
            {},
            "rank and dtype",
        ),
        (
            "strided_set",
            [T((3, 4)), T((3, 4)), T((3,), "int32"), T((1,), "int32"), T((1,), "int32")],
            {},
            "more entries",
        ),
        ("strided_set", [T((3, 4)), T((3, 4)), T((1,)), T((1,), "int32"), T((1,), "int32")], {}, "begin must be a 1-D"),
    ],
)
def test_relation_errors(name, args, attrs, message):
    assert message in rel_error(name, *args, **attrs)


def test_type_inference_reports_bad_calls():
    x = relay.var("x", shape=(2, 20))
    with pytest.raises(RelayTypeError, match="win_length must be in"):
        relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x], relay.stft(x, 4, 1, 5))))


# ---------------------------------------------------------------- sparse_reshape


def _sparse_reshape(indices, prev_shape, new_shape, backend="interpreter"):
    a, b, c = (relay.var(n, shape=v.shape, dtype=str(v.dtype)) for n, v in zip("abc", (indices, prev_shape, new_shape)))
    return run(relay.op.sparse_reshape(a, b, c).astuple(), [a, b, c], indices, prev_shape, new_shape, backend=backend)


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_sparse_reshape_moves_in_range_indices_like_unravel(backend):
    prev_shape, new_shape = np.array([2, 3, 6]), np.array([4, -1, 3])
    dense = rng.random((2, 3, 6)) < 0.3
    indices = np.argwhere(dense).astype(np.int64)
    got_indices, got_shape = _sparse_reshape(indices, prev_shape, new_shape, backend)
    np.testing.assert_array_equal(got_shape, [4, 3, 3])
    # Reshaping the dense tensor moves each non-zero to the coordinates np.argwhere finds there.
    np.testing.assert_array_equal(got_indices, np.argwhere(dense.reshape(4, 3, 3)))
    assert got_indices.dtype == np.int64 and got_shape.dtype == new_shape.dtype


def test_sparse_reshape_digits_of_out_of_range_indices_and_equal_shapes():
    indices = np.array([[0, 7], [2, 5]], dtype=np.int32)  # column 1 is past prev_shape's 4
    got, shape = _sparse_reshape(indices, np.array([3, 4], "int32"), np.array([2, -1], "int32"))
    np.testing.assert_array_equal(shape, [2, 6])
    # flat positions 7 and 13 in digits of (2, 6): TVM's (flat // 6, flat % 6).
    np.testing.assert_array_equal(got, [[1, 1], [2, 1]])
    same, _ = _sparse_reshape(indices, np.array([3, 4], "int32"), np.array([3, -1], "int32"))
    np.testing.assert_array_equal(same, indices)  # equal shapes pass the indices through, as in TVM
    empty, shape = _sparse_reshape(np.zeros((0, 1), "int64"), np.array([4]), np.array([2, 2]))
    assert empty.shape == (0, 2) and shape.tolist() == [2, 2]


@pytest.mark.parametrize(
    "prev_shape, new_shape, message",
    [
        ([3, 4], [-1, -1], "at most one -1"),
        ([3, 4], [-2, 6], "at most one -1"),
        ([3, 4], [5, -1], "number of elements"),
        ([3, 4], [2, 5], "number of elements"),
        ([0, 4], [0, -1], "number of elements"),
        ([-3, 4], [12], "prev_shape must hold sizes >= 0"),
    ],
)
def test_sparse_reshape_rejects_invalid_shapes(prev_shape, new_shape, message):
    with pytest.raises(EvaluationError, match=message):
        _sparse_reshape(np.zeros((1, 2), "int64"), np.array(prev_shape), np.array(new_shape))


# ---------------------------------------------------------------- segment_sum


def _segment_reference(data, ids, count):
    out = np.zeros((count,) + data.shape[1:], data.dtype)
    np.add.at(out, ids, data[: len(ids)])
    return out


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_segment_sum_matches_add_at(backend):
    data = rng.normal(size=(6, 2, 3)).astype("float32")
    ids = np.array([3, 0, 1, 0, 3, 3], "int64")
    x, s = relay.var("x", shape=(6, 2, 3)), relay.var("s", shape=(6,), dtype="int64")
    np.testing.assert_allclose(run(relay.op.segment_sum(x, s), [x, s], data, ids, backend=backend),
                               _segment_reference(data, ids, 4), rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(run(relay.segment_sum(x, s, 6), [x, s], data, ids, backend=backend),
                               _segment_reference(data, ids, 6), rtol=1e-6)  # fmt: skip
    # A 1-D data with fewer ids than rows (only the first rows count), num_segments as an expression.
    v, t = relay.var("v", shape=(Any(),), dtype="int32"), relay.var("t", shape=(Any(),), dtype="int32")
    got = run(relay.segment_sum(v, t, relay.const(np.array([3], "int32"))), [v, t], np.arange(5, dtype="int32"),
              np.array([2, 2, 0], "int32"), backend=backend)  # fmt: skip
    np.testing.assert_array_equal(got, [2, 0, 1])


def test_segment_sum_keeps_the_dtype_and_static_shape():
    x, s = relay.var("x", shape=(5, 4), dtype="float64"), relay.var("s", shape=(5,), dtype="int32")
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x, s], relay.segment_sum(x, s, 3))))
    assert mod["main"].checked_type.ret_type == T((3, 4), "float64")
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x, s], relay.segment_sum(x, s))))
    assert mod["main"].checked_type.ret_type == T((Any(), Any()), "float64")  # a run-time count: dyn.broadcast_to


# ---------------------------------------------------------------- stft


def _torch_stft(x, window, n_fft, hop, win, normalized, onesided):
    torch = pytest.importorskip("torch")
    result = torch.stft(torch.tensor(x), n_fft, hop, win, torch.tensor(window), center=False,
                        normalized=normalized, onesided=onesided, return_complex=True)  # fmt: skip
    return torch.view_as_real(result).numpy()


@pytest.mark.parametrize("backend", ["interpreter", "python"])
@pytest.mark.parametrize("n_fft, hop, win, normalized, onesided", [(8, 3, 6, True, False), (5, 2, 5, False, True)])
def test_stft_matches_torch(backend, n_fft, hop, win, normalized, onesided):
    signal = rng.normal(size=(2, 23)).astype("float32")
    window = rng.uniform(size=win).astype("float32")
    x, w = relay.var("x", shape=(2, 23)), relay.var("w", shape=(win,))
    got = run(relay.stft(x, n_fft, hop, win, w, normalized, onesided), [x, w], signal, window, backend=backend)
    np.testing.assert_allclose(got, _torch_stft(signal, window, n_fft, hop, win, normalized, onesided), atol=1e-5)


def test_stft_builder_defaults_as_tvm():
    x = relay.var("x", shape=(16,))
    call = relay.stft(x, 8)
    assert dict(call.attrs) == {"n_fft": 8, "hop_length": 2, "win_length": 8, "normalized": False, "onesided": True}
    assert call.args[1].op.name == "ones" and call.args[1].attrs["dtype"] == "int32"
    signal = rng.normal(size=16).astype("float32")
    np.testing.assert_allclose(run(call, [x], signal), _torch_stft(signal, np.ones(8, "float32"), 8, 2, 8, False, True),
                               atol=1e-5)  # fmt: skip


# ---------------------------------------------------------------- strided_set, mean_variance, mean_std


@pytest.mark.parametrize("backend", ["interpreter", "python"])
@pytest.mark.parametrize(
    "begin, end, strides, index",
    [
        ([0, 3], [2, -5], [1, -1], np.s_[0:2, 3:-5:-1]),
        ([1], [9], [2], np.s_[1:9:2]),
        ([-1, 0], [-4, 4], [-2, 3], np.s_[-1:-4:-2, 0:4:3]),
        ([0, 1], [3, 3], None, np.s_[0:3, 1:3]),
    ],
)
def test_strided_set_replaces_numpys_slice(backend, begin, end, strides, index):
    data = rng.normal(size=(3, 5)).astype("float32")
    want = data.copy()
    value = rng.normal(size=want[index].shape).astype("float32")
    want[index] = value
    x, v = relay.var("x", shape=data.shape), relay.var("v", shape=value.shape)
    got = run(relay.strided_set(x, v, begin, end, strides), [x, v], data, value, backend=backend)
    np.testing.assert_array_equal(got, want)


def test_strided_set_errors():
    x, v = relay.var("x", shape=(4,)), relay.var("v", shape=(Any(),))
    for begin, end, strides, length, message in [([0], [4], [0], 4, "a stride is 0"), ([0], [4], [2], 3, "shape")]:
        with pytest.raises(EvaluationError, match=message):
            run(
                relay.strided_set(x, v, begin, end, strides), [x, v], np.zeros(4, "float32"), np.ones(length, "float32")
            )


@pytest.mark.parametrize("exclude, keepdims", [(False, False), (True, False), (False, True)])
def test_mean_variance_and_mean_std(exclude, keepdims):
    data = rng.normal(size=(2, 1, 3, 4)).astype("float32")
    axes = (2,) if not exclude else (0, 1, 3)
    x = relay.var("x", shape=data.shape)
    for builder, reference in ((relay.mean_variance, np.var), (relay.mean_std, np.std)):
        mean, statistic = run(builder(x, [2], keepdims, exclude).astuple(), [x], data)
        np.testing.assert_allclose(mean, data.mean(axis=axes, keepdims=keepdims), rtol=1e-5)
        np.testing.assert_allclose(statistic, reference(data, axis=axes, keepdims=keepdims), rtol=1e-5)
    unbiased = run(relay.mean_variance(x, axis=2, unbiased=True)[1], [x], data)
    np.testing.assert_allclose(unbiased, np.var(data, axis=2, ddof=1), rtol=1e-5)


# ---------------------------------------------------------------- one program on every backend


def _program():
    i, p, n = (relay.var(k, shape=s, dtype="int64") for k, s in (("i", (5, 3)), ("p", (3,)), ("n", (2,))))
    d, s = relay.var("d", shape=(6, 4)), relay.var("s", shape=(6,), dtype="int32")
    sig, w = relay.var("sig", shape=(2, 20)), relay.var("w", shape=(6,), dtype="int32")
    x, v = relay.var("x", shape=(3, 4, 5)), relay.var("v", shape=(2, 2, 5))
    reshaped = relay.op.sparse_reshape(i, p, n)
    body = relay.Tuple([
        reshaped[0], reshaped[1],
        relay.segment_sum(d, s, 4),
        relay.stft(sig, 8, 3, 6, w, True, False),
        relay.strided_set(x, v, [2, 1], [-3, 4], [-1, 2]),
        relay.mean_variance(x, axis=(0, 2))[1],
    ])  # fmt: skip
    return relay.IRModule.from_expr(relay.Function([i, p, n, d, s, sig, w, x, v], body))


def _program_inputs():
    return [
        np.array([[0, 0, 0], [0, 2, 1], [1, 1, 5], [1, 0, 3], [0, 1, 4]], "int64"),
        np.array([2, 3, 6], "int64"),
        np.array([-1, 4], "int64"),
        rng.normal(size=(6, 4)).astype("float32"),
        np.array([3, 0, 3, 1, -1, 9], "int32"),  # -1 counts from the end; 9 is skipped
        rng.normal(size=(2, 20)).astype("float32"),
        np.array([1, 2, 3, 3, 2, 1], "int32"),
        rng.normal(size=(3, 4, 5)).astype("float32"),
        rng.normal(size=(2, 2, 5)).astype("float32"),
    ]


def _expected(i, p, n, d, s, sig, w, x, v):
    flat = np.ravel_multi_index(i.T, tuple(p))
    segments = np.zeros((4, 4), "float32")
    for row, segment in zip(d, s):
        if -4 <= segment < 4:
            segments[segment] += row
    updated = x.copy()
    updated[2:-3:-1, 1:4:2] = v
    return [
        np.stack(np.unravel_index(flat, (9, 4)), axis=1), np.array([9, 4]), segments,
        _torch_stft(sig, w.astype("float32"), 8, 3, 6, True, False), updated, np.var(x, axis=(0, 2)),
    ]  # fmt: skip


@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp"])
def test_program_runs_on_every_backend(backend):
    inputs = _program_inputs()
    got = transpile.compile(_program(), backend=backend)(*inputs)
    for g, want in zip(got, _expected(*inputs)):
        np.testing.assert_allclose(np.asarray(g, "float64"), np.asarray(want, "float64"), rtol=1e-5, atol=1e-5)


def test_program_text_round_trips():
    mod = relay.transform.InferType()(_program())
    text = mod.astext()
    for name in ("sparse_reshape(", "scatter_elements(", "stft(", "strided_set(", "variance("):
        assert name in text
    assert relay.structural_equal(relay.transform.InferType()(relay.parse(text)), mod)


def test_dynamic_shapes_on_cpp():
    """`?` dims: one build, run on several sizes; run-time checks fail the call, never the process."""
    a = relay.var("a", shape=(Any(), Any()), dtype="int32")
    p, n = relay.var("p", shape=(Any(),), dtype="int32"), relay.var("n", shape=(Any(),), dtype="int32")
    sig, w = relay.var("sig", shape=(Any(),)), relay.var("w", shape=(Any(),))
    x, v = relay.var("x", shape=(Any(), Any())), relay.var("v", shape=(Any(), Any()))
    b = relay.var("b", shape=(Any(),), dtype="int32")
    body = relay.Tuple([relay.op.sparse_reshape(a, p, n).astuple(), relay.stft(sig, 4, 2, 3, w),
                        relay.strided_set(x, v, b, [5, 5], [1, 2])])  # fmt: skip
    mod = relay.IRModule.from_expr(relay.Function([a, p, n, sig, w, x, v, b], body))
    compiled, reference = (transpile.compile(mod, backend=kind) for kind in ("cpp", "interpreter"))

    def same(*args):
        for got, want in zip(_leaves(compiled(*args)), _leaves(reference(*args))):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    good = [np.array([[1, 2], [0, 5]], "int32"), np.array([3, 6], "int32"), np.array([9, 2], "int32"),
            rng.normal(size=11).astype("float32"), np.ones(3, "float32"),
            np.zeros((4, 6), "float32"), np.ones((3, 3), "float32"), np.array([1, 0], "int32")]  # fmt: skip
    same(*good)
    same(np.zeros((0, 1), "int32"), np.array([4], "int32"), np.array([-1, 2], "int32"), *good[3:6],
         np.ones((2, 2), "float32"), np.array([2, 1], "int32"))  # fmt: skip
    for index, bad, message in [
        (0, np.array([[1, 2, 0]], "int32"), "one column per dimension"),
        (2, np.array([-1, -1], "int32"), "at most one -1"),
        (4, np.ones(4, "float32"), "win_length=3"),
        (3, np.ones(3, "float32"), "shorter than n_fft"),
        (6, np.ones((2, 3), "float32"), "shape of the slice"),
    ]:
        args = list(good)
        args[index] = bad
        with pytest.raises(EvaluationError, match=message):
            compiled(*args)


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [np.asarray(value, "float64")]


def test_segment_sum_with_a_data_dependent_count_is_refused_by_cpp():
    x, s = relay.var("x", shape=(4, 2)), relay.var("s", shape=(4,), dtype="int32")
    with pytest.raises(UnsupportedFeatureError, match="dyn.broadcast_to"):
        transpile.compile(relay.IRModule.from_expr(relay.Function([x, s], relay.segment_sum(x, s))), backend="cpp")
