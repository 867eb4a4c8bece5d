"""Programs using the sorting, scatter/gather, einsum, trilu and meshgrid operators: builders, the text
format, and the interpreter, python and cpp backends against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError, UnsupportedFeatureError
from transpile.relay.ty import TensorType, TupleType

rng = np.random.default_rng(11)

# Every operator with a TE lowering, on the static shapes the cpp backend compiles; topk's tuple
# result is projected, meshgrid's returned whole.
PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 5, 3), float32], %i: Tensor[(2, 6), int64], %u: Tensor[(6, 3), float32],
          %e: Tensor[(4, 1, 3), int32], %m: Tensor[(3, 2), float32], %v: Tensor[(7), float32],
          %w: Tensor[(2), float32], %k: int64, %s: Tensor[(2), int64], %q: Tensor[(3, 1), int32]) {
  %0 = topk(%x, k=2, axis=1);
  %1 = argsort(%x, axis=0, is_ascend=False, dtype="int64");
  %2 = sort(%v);
  %3 = searchsorted(%2, %m, right=True);
  %4 = gather_nd(%x, %i);
  %5 = scatter_nd(%x, %i, %u, mode="add");
  %6 = scatter_elements(%x, %e, %x, axis=1, reduction="mean");
  %7 = einsum((%x, %m), equation="abc,cd->abd");
  %8 = trilu(%x, %k, upper=False);
  %9 = meshgrid((%v, %w), indexing="xy");
  %10 = adv_index((%x, %q, %s));
  %11 = unravel_index(%s, %s);
  (%0.0, add(%0.1, 1), %1, %3, add(%4, 1f), %5, %6, multiply(%7, 2f), %8, %9, %10, %11)
}
"""


def _program_inputs():
    x = rng.integers(-3, 3, (4, 5, 3)).astype("float32")  # ties
    x[0, 1, 0] = np.nan
    return [
        x,
        rng.integers(-4, 4, (2, 6)),
        rng.normal(size=(6, 3)).astype("float32"),
        rng.integers(-5, 5, (4, 1, 3)).astype("int32"),
        rng.normal(size=(3, 2)).astype("float32"),
        rng.normal(size=7).astype("float32"),
        rng.normal(size=2).astype("float32"),
        np.array(-1, "int64"),
        np.array([3, 4], "int64"),
        np.array([[0], [-1], [2]], "int32"),
    ]


def _expected(x, i, u, e, m, v, w, k, s, q):
    """The program's results written with numpy directly."""
    order = np.flip(np.argsort(np.flip(np.nan_to_num(x, nan=np.inf), 1), 1, kind="stable"), 1)
    top_index = 4 - order[:, :2]
    top = np.take_along_axis(x, top_index, 1)
    descending = 3 - np.flip(np.argsort(np.flip(np.nan_to_num(x, nan=np.inf), 0), 0, kind="stable"), 0)
    gathered = x[i[0], i[1]]
    scattered = x.copy()
    np.add.at(scattered, (i[0], i[1]), u)
    sums, counts = x.copy(), np.ones(x.shape)
    for a in range(4):
        for c in range(3):
            target = e[a, 0, c] % 5 if -5 <= e[a, 0, c] < 5 else None
            if target is not None:
                sums[a, target, c] += x[a, 0, c]
                counts[a, target, c] += 1
    xs, ws = np.meshgrid(v, w, indexing="xy")
    return [
        top,
        (top_index + 1).astype("int32"),
        descending,
        np.searchsorted(np.sort(v), m, side="right").astype("int32"),
        gathered + 1,
        scattered,
        (sums / counts).astype("float32"),
        np.einsum("abc,cd->abd", x, m) * 2,
        np.tril(x, int(k)),
        (xs, ws),
        x[q, s],
        np.stack(np.unravel_index(s, (3, 4))),
    ]


def _assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
        return
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got.astype("float64"), np.asarray(want, "float64"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp"])
def test_program_runs_on_every_backend(backend):
    mod = relay.parse(PROGRAM)
    inputs = _program_inputs()
    got = transpile.compile(mod, backend=backend)(*inputs)
    want = _expected(*inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_same(g, w)


def test_program_text_round_trips():
    mod = relay.parse(PROGRAM)
    text = mod.astext()
    for name in ("topk(", "argsort(", "searchsorted(", "gather_nd(", "scatter_nd(", "scatter_elements(", "einsum(",
                 "trilu(", "meshgrid(", "adv_index(", "unravel_index("):  # fmt: skip
        assert name in text
    assert relay.structural_equal(relay.parse(text), mod)


def test_tvm_printed_attributes_parse():
    # TVM printed every attribute, booleans as ints and an unset dtype as "".
    mod = relay.parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(3, 4), float32]) {
  %0 = topk(%x, k=2, axis=-1, ret_type="both", is_ascend=0, dtype="int64");
  %1 = sort(%x, axis=-1, is_ascend=1, dtype="");
  %2 = argsort(%x, axis=0, is_ascend=1, dtype="int32");
  (%0.1, %1, %2)
}""")
    mod = relay.transform.InferType()(mod)
    assert mod["main"].checked_type.ret_type == TupleType(
        [TensorType((3, 2), "int64"), TensorType((3, 4)), TensorType((3, 4), "int32")]
    )
    x = rng.normal(size=(3, 4)).astype("float32")
    indices, values, order = relay.evaluate(mod, x)
    np.testing.assert_array_equal(indices, np.argsort(-x, axis=-1, kind="stable")[:, :2])
    np.testing.assert_array_equal(values, np.sort(x, axis=-1))
    np.testing.assert_array_equal(order, np.argsort(x, axis=0, kind="stable"))


def test_builders_take_tvm_argument_order():
    x = relay.var("x", shape=(3, 4))
    i = relay.var("i", shape=(2, 3), dtype="int64")
    assert relay.topk(x, 2, 0, "values", True, "int64").attrs == {
        "k": 2, "axis": 0, "ret_type": "values", "is_ascend": True, "dtype": "int64"
    }  # fmt: skip
    assert dict(relay.argsort(x, 0, False, "int64").attrs) == {"axis": 0, "is_ascend": False, "dtype": "int64"}
    assert relay.sort(x, 0, False).attrs["is_ascend"] is False
    assert dict(relay.searchsorted(x, x, True, "int64").attrs) == {"right": True, "dtype": "int64"}
    assert dict(relay.gather_nd(x, i, 1, 2).attrs) == {"batch_dims": 1, "index_rank": 2}
    assert dict(relay.scatter_elements(x, i, x, 1, "add").attrs) == {"axis": 1, "reduction": "add"}
    assert dict(relay.scatter_nd(x, i, x, "mul").attrs) == {"mode": "mul"}
    assert relay.einsum([x, x], "ij,kj->ik").attrs["equation"] == "ij,kj->ik"
    trilu = relay.trilu(x, 1, False)  # a Python k becomes an int32 constant, as in TVM
    assert trilu.args[1].data.dtype == np.int32 and trilu.attrs["upper"] is False
    assert dict(relay.unique(relay.var("v", shape=(6,)), False, True).attrs) == {"sorted": False, "return_counts": True}
    values = relay.topk(x, k=2)[0]
    grids = relay.meshgrid([relay.var("a", shape=(3,)), relay.var("b", shape=(2,))], "xy")
    body = relay.Tuple([values, grids[1], relay.adv_index([x, i]), relay.argwhere(x)])
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function(relay.analysis.free_vars(body), body)))
    assert mod["main"].checked_type.ret_type == TupleType(
        [TensorType((3, 2)), TensorType((2, 3)), TensorType((2, 3, 4)), TensorType((relay.Any(), 2), "int32")]
    )


def test_data_dependent_operators_run_on_interpreter_and_python_only():
    mod = relay.parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(6), int32]) {
  %0 = unique(%x, sorted=False, return_counts=True);
  (argwhere(%x), %0.0, %0.2, %0.3, %0.4)
}""")
    x = np.array([0, 3, 3, 0, -1, 3], "int32")
    for backend in ("interpreter", "python"):
        where, unique, inverse, count, counts = transpile.compile(mod, backend=backend)(x)
        assert where.tolist() == [[1], [2], [4], [5]]
        assert unique.tolist() == [0, 3, -1, 0, 0, 0] and count.tolist() == [3]
        assert inverse.tolist() == [0, 1, 1, 0, 2, 1] and counts.tolist() == [2, 3, 1, 0, 0, 0]
    with pytest.raises(UnsupportedFeatureError, match="argwhere|unique"):
        transpile.compile(mod, backend="cpp")


def test_dynamic_shapes_on_cpp():
    mod = relay.parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(?, 6), float32], %i: Tensor[(1, ?), int64], %u: Tensor[(?, 6), float32],
          %e: Tensor[(?, 2), int32]) {
  %0 = topk(%x, k=3, axis=1);
  %1 = sort(%x, axis=1);
  (%0.0, %0.1, argsort(%x, axis=0), scatter_nd(%x, %i, %u), gather_nd(%x, %i),
   scatter_elements(%x, %e, %x, axis=0, reduction="add"), searchsorted(%1, %x, right=True), adv_index((%x, %e)))
}""")
    compiled = transpile.compile(mod, backend="cpp")
    for rows in (4, 7):
        inputs = [
            rng.normal(size=(rows, 6)).astype("float32"),
            rng.integers(-rows, rows, (1, 3)),
            rng.normal(size=(3, 6)).astype("float32"),
            rng.integers(-3, 5, (2, 2)).astype("int32"),
        ]
        want = relay.evaluate(mod, *inputs)
        got = compiled(*inputs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_cpp_checks_dynamic_extents_before_running_the_kernels():
    mod = relay.parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(?, 3), float32], %i: Tensor[(?, 3), int32], %k: Tensor[(?), float32]) {
  (scatter_elements(%x, %i, %x, axis=1), topk(%k, k=3).0)
}""")
    compiled = transpile.compile(mod, backend="cpp")
    x, k = np.ones((2, 3), "float32"), np.arange(4, dtype="float32")
    scattered, top = compiled(x, np.zeros((2, 3), "int32"), k)
    assert top.tolist() == [3, 2, 1] and scattered.shape == (2, 3)
    with pytest.raises(EvaluationError, match="scatter_elements: indices exceed"):
        compiled(x, np.zeros((5, 3), "int32"), k)
    with pytest.raises(EvaluationError, match="topk: k=3 exceeds the length of axis 0"):
        compiled(x, np.zeros((2, 3), "int32"), k[:2])
