"""Sorting, searching, scatter/gather, einsum, trilu, meshgrid: relations, numpy_impl against numpy, torch and
onnx.reference, builders, text round trip, and the interpreter, python and cpp backends."""

from __future__ import annotations

import numpy as np
import pytest

from transpile.relay.op.registry import OpPattern, RelationError, get, normalize_attrs
from transpile.relay.ty import Any, TensorType, TupleType

rng = np.random.default_rng(7)


def T(shape, dtype="float32"):
    return TensorType(shape, dtype)


def rel(name, *arg_types, **attrs):
    opdef = get(name)
    return opdef.type_rel(list(arg_types), normalize_attrs(opdef, attrs))


def rel_error(name, *arg_types, **attrs) -> str:
    with pytest.raises(RelationError) as info:
        rel(name, *arg_types, **attrs)
    return str(info.value)


def type_of(value):
    if isinstance(value, (tuple, list)):
        return TupleType([type_of(v) for v in value])
    value = np.asarray(value)
    return T(value.shape, value.dtype.name)


def run(name, *args, **attrs):
    """numpy_impl of one call; checks the result against the relation's type."""
    opdef = get(name)
    args = [tuple(np.asarray(a) for a in x) if isinstance(x, (tuple, list)) else np.asarray(x) for x in args]
    normalized = normalize_attrs(opdef, attrs)
    out_type = opdef.type_rel([type_of(a) for a in args], normalized)
    out = opdef.numpy_impl(args, normalized, out_type)
    types = list(out_type.fields) if isinstance(out_type, TupleType) else [out_type]
    for value, ty in zip(out if isinstance(out, tuple) else [out], types):
        assert value.dtype == np.dtype(ty.dtype)
        assert all(isinstance(d, type(Any())) or d == s for d, s in zip(ty.shape, value.shape)), (ty, value.shape)
    return out


def onnx_ref(op_type, inputs, n_out=1, **attrs):
    """The outputs of onnx.reference for one node (opset 18)."""
    from onnx import TensorProto, helper
    from onnx.helper import np_dtype_to_tensor_dtype
    from onnx.reference import ReferenceEvaluator

    names = [f"in{k}" for k in range(len(inputs))]
    outs = [f"out{k}" for k in range(n_out)]
    graph = helper.make_graph(
        [helper.make_node(op_type, names, outs, **attrs)],
        "g",
        [helper.make_tensor_value_info(n, np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))


WITH_TIES = np.array([[1, 3, 3, np.nan, 2, -1, 3, np.nan], [0, 0, -2, 5, 5, 1, 1, 0]], "float32")


# ---------------------------------------------------------------- relations


def test_sort_family_relations():
    x = T((3, 5))
    assert rel("topk", x, k=2) == TupleType([T((3, 2)), T((3, 2), "int32")])
    assert rel("topk", x, k=2, axis=0, ret_type="indices", dtype="int64") == T((2, 5), "int64")
    assert rel("topk", x, k=0, ret_type="values") == T((3, 5))  # k < 1: every element
    assert rel("topk", T((Any(), 4)), k=3, axis=0, ret_type="values") == T((3, 4))
    assert rel("argsort", x, axis=0) == T((3, 5), "int32")
    assert rel("argsort", x, dtype="int64") == T((3, 5), "int64")
    assert rel("sort", T((Any(), 5), "int8")) == T((Any(), 5), "int8")
    assert rel("searchsorted", T((6,)), T((2, 3))) == T((2, 3), "int32")
    assert rel("searchsorted", T((2, 6)), T((2, 3)), dtype="int64") == T((2, 3), "int64")
    assert rel("argwhere", T((2, 3, 4), "bool")) == T((Any(), 3), "int32")
    assert rel("unique", T((6,), "int64")) == TupleType(
        [T((6,), "int64"), T((6,), "int32"), T((6,), "int32"), T((1,), "int32")]
    )
    assert len(rel("unique", T((6,)), return_counts=True).fields) == 5


@pytest.mark.parametrize(
    "name, args, attrs, message",
    [
        ("topk", [T((3, 5))], {"axis": 2}, "topk: axis 2 is out of range for Tensor[(3, 5), float32]"),
        ("topk", [T((3, 5))], {"k": 6}, "topk: k=6 exceeds axis 1 of Tensor[(3, 5), float32] (dimension 5)"),
        ("topk", [T((3, 5))], {"ret_type": "all"}, "ret_type must be both, values or indices, got 'all'"),
        ("topk", [T(())], {}, "axis -1 is out of range"),
        ("argsort", [T((3,))], {"axis": -2}, "argsort: axis -2 is out of range"),
        ("argsort", [T((3,))], {"dtype": "bool"}, "argsort: dtype of the indices must be numeric, got bool"),
        ("sort", [T((3,)), T((3,))], {}, "sort: expected 1 argument(s), got 2"),
        ("searchsorted", [T((4,)), T(())], {}, "values must have rank 1 or more"),
        ("searchsorted", [T((2, 4)), T((5,))], {}, "needs values of the same rank"),
        ("searchsorted", [T((2, 4)), T((3, 5))], {}, "differ on outer axis 0"),
        ("searchsorted", [T((4,)), T((3,), "int32")], {}, "must have the same dtype"),
        ("searchsorted", [T((4,)), T((3,))], {"dtype": "float32"}, "dtype must be an integer type"),
        ("unique", [T((2, 3))], {}, "unique: the input must be a 1-D tensor, got Tensor[(2, 3), float32]"),
    ],
)
def test_sort_family_relation_errors(name, args, attrs, message):
    assert message in rel_error(name, *args, **attrs)


def test_gather_nd_relation():
    # TVM's layout: indices (M, Y_0..Y_{K-1}); output (Y.., X_{M+B}..).
    assert rel("gather_nd", T((4, 5, 6)), T((2, 3, 7), "int64")) == T((3, 7, 6))
    assert rel("gather_nd", T((4, 5, 6)), T((3, 2), "int32")) == T((2,))
    assert rel("gather_nd", T((4, 5, 6)), T((1, 4, 3), "int32"), batch_dims=1) == T((4, 3, 6))
    assert rel("gather_nd", T((4, 5)), T((Any(), 3), "int32"), index_rank=2) == T((3,))
    assert "needs a static first axis" in rel_error("gather_nd", T((4, 5)), T((Any(), 3), "int32"))
    assert "indices must be a tensor of integers" in rel_error("gather_nd", T((4, 5)), T((1, 3)))
    assert "exceed the rank" in rel_error("gather_nd", T((4, 5)), T((3, 2), "int32"))
    assert "batch dimension 0 differs" in rel_error("gather_nd", T((4, 5)), T((1, 3), "int32"), batch_dims=1)
    assert "index_rank=3 disagrees" in rel_error("gather_nd", T((4, 5, 6)), T((2, 3), "int32"), index_rank=3)


def test_scatter_relations():
    data = T((4, 5))
    assert rel("scatter_elements", data, T((2, 5), "int64"), T((3, 5)), axis=0, reduction="mean") == data
    assert rel("scatter_nd", data, T((1, 3), "int32"), T((3, 5)), mode="add") == data
    assert rel("scatter_nd", data, T((2, 3), "int32"), T((3,))) == data
    assert rel("scatter_nd", data, T((2,), "int32"), T(())) == data
    errors = [
        (("scatter_elements", data, T((2, 5)), T((2, 5))), {}, "indices must be a tensor of integers"),
        (("scatter_elements", data, T((2, 5), "int32"), T((2, 5))), {"reduction": "sum"}, "reduction must be one of"),
        (("scatter_elements", data, T((2,), "int32"), T((2,))), {}, "must have the same rank"),
        (("scatter_elements", data, T((2, 5), "int32"), T((1, 5))), {}, "exceed updates"),
        (("scatter_elements", data, T((2, 6), "int32"), T((2, 6))), {}, "exceed data"),
        (("scatter_elements", data, T((2, 5), "int32"), T((2, 5), "int32")), {}, "must have the dtype of data"),
        (("scatter_elements", data, T((2, 5), "int32"), T((2, 5))), {"axis": 2}, "axis 2 is out of range"),
        (
            ("scatter_elements", T((4,), "bool"), T((2,), "int32"), T((2,), "bool")),
            {"reduction": "mean"},
            "needs numbers",
        ),
        (("scatter_nd", data, T((3, 3), "int32"), T((3,))), {}, "exceed the rank of data"),
        (("scatter_nd", data, T((1, 3), "int32"), T((3,))), {}, "must have rank 2"),
        (("scatter_nd", data, T((1, 3), "int32"), T((2, 5))), {}, "differ on axis 0"),
        (("scatter_nd", data, T((1, 3), "int32"), T((3, 4))), {}, "differ on the sliced axis 1"),
        (("scatter_nd", data, T((1, 3), "int32"), T((3, 5))), {"mode": "mean"}, "mode must be one of"),
    ]
    for args, attrs, message in errors:
        assert message in rel_error(*args, **attrs), args


def test_adv_index_and_unravel_index_relations():
    data = T((4, 5, 6))
    assert rel("adv_index", TupleType([data, T((2, 1), "int64"), T((3,), "int32")])) == T((2, 3, 6))
    assert rel("adv_index", TupleType([data, T((), "int64")])) == T((5, 6))
    assert "not broadcastable" in rel_error("adv_index", TupleType([data, T((2,), "int32"), T((3,), "int32")]))
    assert "too many" in rel_error("adv_index", TupleType([T((4,)), T((2,), "int32"), T((3,), "int32")]))
    assert "every index must be a tensor of integers" in rel_error("adv_index", TupleType([data, T((2,))]))
    assert "at least one index tensor" in rel_error("adv_index", TupleType([data]))
    assert rel("unravel_index", T((5,), "int32"), T((2,), "int64")) == T((2, 5), "int32")
    assert rel("unravel_index", T((), "int64"), T((3,), "int64")) == T((3,), "int64")
    assert "static length" in rel_error("unravel_index", T((5,), "int32"), T((Any(),), "int32"))
    assert "scalar or a 1-D tensor" in rel_error("unravel_index", T((2, 5), "int32"), T((2,), "int32"))
    assert "shape must be a tensor of integers" in rel_error("unravel_index", T((5,), "int32"), T((2,)))


@pytest.mark.parametrize(
    "equation, shapes, out",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)], (2, 4)),
        ("ij,jk", [(2, 3), (3, 4)], (2, 4)),
        ("ba", [(2, 3)], (3, 2)),
        ("ii", [(3, 3)], ()),
        ("ii->i", [(3, 3)], (3,)),
        ("...ij,...jk", [(5, 2, 3), (1, 3, 4)], (5, 2, 4)),
        ("i...,j...->...ij", [(2, 7), (3, 1)], (7, 2, 3)),
        ("b i j , b j k -> b i k", [(Any(), 2, 3), (4, 3, 5)], (4, 2, 5)),
        ("ij,ij->ij", [(1, 3), (2, 3)], (2, 3)),
        ("i,i->", [(3,), (3,)], ()),
    ],
)
def test_einsum_relation(equation, shapes, out):
    assert rel("einsum", TupleType([T(s) for s in shapes]), equation=equation) == T(out)


@pytest.mark.parametrize(
    "equation, shapes, message",
    [
        ("ij,jk->ik", [(2, 3)], "has 2 operand term(s), got 1 tensors"),
        ("ij,jk->ik", [(2, 3), (4, 5)], "axes labelled 'j' have incompatible sizes 3, 4"),
        ("ij->ik", [(2, 3)], "output subscript 'k' names no input axis"),
        ("ij->ii", [(2, 3)], "output subscript 'i' appears more than once"),
        ("ij", [(2, 3, 4)], "operand 0 has rank 3 but its subscripts 'ij' name 2 axes"),
        ("...ij->ij", [(2, 3, 4)], "need a '...' in the output"),
        ("i1", [(2, 3)], "invalid character '1'"),
        ("......i", [(2, 3)], "more than one '...'"),
    ],
)
def test_einsum_relation_errors(equation, shapes, message):
    assert message in rel_error("einsum", TupleType([T(s) for s in shapes]), equation=equation)


def test_einsum_dtype_errors():
    assert "same dtype" in rel_error("einsum", TupleType([T((2,)), T((2,), "int32")]), equation="i,i")
    assert "needs numeric tensors" in rel_error("einsum", TupleType([T((2,), "bool")]), equation="i")


def test_trilu_and_meshgrid_relations():
    assert rel("trilu", T((2, 3, 4)), T((), "int64"), upper=False) == T((2, 3, 4))
    assert "k must be a 0-d integer tensor" in rel_error("trilu", T((3, 4)), T((1,), "int32"))
    assert "k must be a 0-d integer tensor" in rel_error("trilu", T((3, 4)), T(()))
    assert "rank 2 or more" in rel_error("trilu", T((4,)), T((), "int32"))
    vectors = TupleType([T((3,)), T(()), T((4,))])
    assert rel("meshgrid", vectors) == TupleType([T((3, 1, 4))] * 3)
    assert rel("meshgrid", vectors, indexing="xy") == TupleType([T((1, 3, 4))] * 3)
    assert rel("meshgrid", TupleType([T((Any(),))]), indexing="xy") == TupleType([T((Any(),))])
    assert "scalar or a 1-D vector" in rel_error("meshgrid", TupleType([T((3, 2))]))
    assert "same dtype" in rel_error("meshgrid", TupleType([T((3,)), T((2,), "int32")]))
    assert "indexing must be ij or xy" in rel_error("meshgrid", vectors, indexing="ji")


def test_patterns_follow_tvm():
    expected = {
        "topk": OpPattern.OPAQUE,
        "argsort": OpPattern.OPAQUE,
        "sort": OpPattern.OPAQUE,
        "searchsorted": OpPattern.OPAQUE,
        "argwhere": OpPattern.OPAQUE,
        "unique": OpPattern.OPAQUE,
        "scatter_elements": OpPattern.OPAQUE,
        "scatter_nd": OpPattern.OPAQUE,
        "gather_nd": OpPattern.INJECTIVE,
        "adv_index": OpPattern.INJECTIVE,
        "unravel_index": OpPattern.INJECTIVE,
        "meshgrid": OpPattern.INJECTIVE,
        "einsum": OpPattern.INJECTIVE,
        "trilu": OpPattern.ELEMWISE,
    }
    assert {name: get(name).pattern for name in expected} == expected


# ---------------------------------------------------------------- numpy_impl: sorting and searching


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("axis", [1, 0, -1])
def test_topk_matches_onnx_reference(largest, axis):
    x = WITH_TIES if axis != 0 else WITH_TIES.T.copy()
    k = 5
    values, indices = run("topk", x, k=k, axis=axis, is_ascend=not largest, dtype="int64")
    want_values, want_indices = onnx_ref("TopK", [x, np.array([k], "int64")], 2, axis=axis, largest=largest)
    np.testing.assert_array_equal(values, want_values)
    np.testing.assert_array_equal(indices, want_indices)


def test_topk_integers_and_all_elements():
    x = np.array([[5, -3, 5, 0, 127, -128]], "int8")
    values, indices = run("topk", x, k=0)
    np.testing.assert_array_equal(indices, [[4, 0, 2, 3, 1, 5]])
    np.testing.assert_array_equal(values, [[127, 5, 5, 0, -3, -128]])
    assert run("topk", x, k=2, ret_type="indices").tolist() == [[4, 0]]
    assert run("topk", x, k=2, ret_type="values", is_ascend=True).tolist() == [[-128, -3]]


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_torch_stable_sort(descending):
    torch = pytest.importorskip("torch")
    for x in (WITH_TIES, rng.integers(-3, 3, (4, 9)).astype("int32"), rng.random((3, 7)) < 0.5):
        for axis in (0, 1):
            values, indices = torch.sort(torch.from_numpy(x), dim=axis, descending=descending, stable=True)
            got = run("argsort", x, axis=axis, is_ascend=not descending, dtype="int64")
            np.testing.assert_array_equal(got, indices.numpy())
            np.testing.assert_array_equal(run("sort", x, axis=axis, is_ascend=not descending), values.numpy())


def test_argsort_ascending_is_numpy_stable_argsort():
    x = rng.integers(0, 4, (5, 6)).astype("uint8")
    np.testing.assert_array_equal(run("argsort", x, axis=0), np.argsort(x, axis=0, kind="stable"))
    assert run("argsort", x, dtype="float32").dtype == np.float32


def test_searchsorted_matches_numpy_and_torch():
    torch = pytest.importorskip("torch")
    sequence = np.array([-2.0, 0.0, 0.0, 1.5, 3.0, np.nan], "float32")
    values = np.array([[-3.0, 0.0, 1.0, 3.0, 4.0, np.nan]], "float32")
    for right in (False, True):
        side = "right" if right else "left"
        np.testing.assert_array_equal(
            run("searchsorted", sequence, values, right=right), np.searchsorted(sequence, values, side=side)
        )
        rows = np.sort(rng.integers(-5, 5, (2, 3, 8)), axis=-1).astype("int64")
        probes = rng.integers(-6, 6, (2, 3, 4)).astype("int64")
        want = torch.searchsorted(torch.from_numpy(rows), torch.from_numpy(probes), right=right).numpy()
        np.testing.assert_array_equal(run("searchsorted", rows, probes, right=right, dtype="int64"), want)


def test_argwhere_matches_onnx_nonzero():
    x = np.array([[0, 1.5, 0], [np.nan, 0, -2]], "float32")
    out = run("argwhere", x)
    assert out.dtype == np.int32 and out.shape == (3, 2)
    np.testing.assert_array_equal(out, onnx_ref("NonZero", [x])[0].T)
    assert run("argwhere", np.zeros((2, 3), bool)).shape == (0, 2)


@pytest.mark.parametrize("is_sorted", [True, False])
def test_unique_matches_onnx_reference(is_sorted):
    x = np.array([4, 5, 1, 2, 3, 3, 4, 5], "int32")
    unique, first, inverse, count, counts = run("unique", x, sorted=is_sorted, return_counts=True)
    want = onnx_ref("Unique", [x], 4, sorted=int(is_sorted))
    n = int(count[0])
    assert n == 5
    for got, ref in zip((unique[:n], first[:n], inverse, counts[:n]), want):
        np.testing.assert_array_equal(got, ref)
    assert unique[n:].tolist() == [0, 0, 0] and counts[n:].tolist() == [0, 0, 0]
    # TVM's documented example (is_sorted=False).
    if not is_sorted:
        assert unique[:n].tolist() == [4, 5, 1, 2, 3] and inverse.tolist() == [0, 1, 2, 3, 4, 4, 0, 1]


# ---------------------------------------------------------------- numpy_impl: gathers and scatters


def _last_axis_first(indices):
    """ONNX indices (..., M) in TVM's layout (M, ...)."""
    return np.moveaxis(indices, -1, 0)


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_matches_onnx_reference(batch_dims):
    data = rng.normal(size=(3, 4, 5)).astype("float32")
    for m in (1, 2):
        indices = np.stack([rng.integers(-d, d, (3, 2)) for d in data.shape[batch_dims : batch_dims + m]], -1)
        want = onnx_ref("GatherND", [data, indices], batch_dims=batch_dims)[0]
        np.testing.assert_array_equal(run("gather_nd", data, _last_axis_first(indices), batch_dims=batch_dims), want)


def test_gathers_clamp_out_of_range_indices():
    data = np.arange(12, dtype="int32").reshape(3, 4)
    assert run("gather_nd", data, np.array([[7, -9]])).tolist() == [[8, 9, 10, 11], [0, 1, 2, 3]]
    assert run("adv_index", [data, np.array([5, -1]), np.array([-5, 9])]).tolist() == [8, 11]


def test_adv_index_is_numpy_advanced_indexing():
    torch = pytest.importorskip("torch")
    data = rng.normal(size=(4, 5, 6)).astype("float32")
    rows, cols = rng.integers(-4, 4, (2, 1)), rng.integers(-5, 5, (3,)).astype("int32")
    np.testing.assert_array_equal(run("adv_index", [data, rows, cols]), data[rows, cols])
    want = torch.from_numpy(data)[torch.from_numpy(rows), torch.from_numpy(cols.astype("int64"))].numpy()
    np.testing.assert_array_equal(run("adv_index", [data, rows, cols]), want)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "min", "max"])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_scatter_elements_matches_onnx_reference(reduction, dtype):
    data = rng.integers(-9, 9, (4, 5)).astype(dtype)
    for axis in (0, 1, -1):
        shape = (6, 5) if axis == 0 else (4, 7)
        extent = data.shape[axis]
        indices = rng.integers(-extent, extent, shape)  # repeated targets and negative indices
        updates = rng.integers(-9, 9, shape).astype(dtype)
        attrs = {} if reduction == "none" else {"reduction": reduction}
        want = onnx_ref("ScatterElements", [data, indices, updates], axis=axis, **attrs)[0]
        got = run(
            "scatter_elements",
            data,
            indices,
            updates,
            axis=axis,
            reduction="update" if reduction == "none" else reduction,
        )
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_scatter_elements_matches_torch_scatter_reduce(reduce, dtype):
    torch = pytest.importorskip("torch")
    reduction = {"sum": "add", "prod": "mul", "mean": "mean", "amax": "max", "amin": "min"}[reduce]
    data = rng.integers(-9, 9, (4, 5)).astype(dtype)
    indices = rng.integers(0, 4, (6, 3))
    updates = rng.integers(-9, 9, (7, 4)).astype(dtype)  # larger than indices: torch uses the leading part
    want = torch.from_numpy(data).scatter_reduce(0, torch.from_numpy(indices), torch.from_numpy(updates), reduce)
    got = run("scatter_elements", data, indices, updates, axis=0, reduction=reduction)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "min", "max"])
def test_scatter_nd_matches_onnx_reference(reduction):
    data = rng.integers(-9, 9, (4, 5, 3)).astype("float32")
    for m in (1, 2, 3):
        indices = np.stack([rng.integers(-d, d, (6,)) for d in data.shape[:m]], -1)  # repeats likely
        updates = rng.integers(-9, 9, (6,) + data.shape[m:]).astype("float32")
        attrs = {} if reduction == "none" else {"reduction": reduction}
        want = onnx_ref("ScatterND", [data, indices, updates], **attrs)[0]
        mode = "update" if reduction == "none" else reduction
        np.testing.assert_array_equal(run("scatter_nd", data, _last_axis_first(indices), updates, mode=mode), want)


def test_scatters_skip_out_of_range_indices():
    data = np.zeros((2, 3), "int32")
    got = run("scatter_elements", data, np.array([[5, -1, -7]]), np.array([[1, 2, 3]], "int32"), axis=1)
    assert got.tolist() == [[0, 0, 2], [0, 0, 0]]
    got = run("scatter_nd", data, np.array([[1, 2, -3]]), np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3]], "int32"))
    assert got.tolist() == [[0, 0, 0], [1, 1, 1]]  # 2 and -3 (-1 after wrapping) are out of range


def test_scatter_duplicates_apply_in_order():
    data = np.zeros(3, "float32")
    got = run("scatter_elements", data, np.array([1, 1, 1]), np.array([5.0, 6.0, 7.0], "float32"))
    assert got.tolist() == [0, 7, 0]
    got = run("scatter_nd", data, np.array([[2, 2, 0]]), np.array([1.0, 2.0, 3.0], "float32"))
    assert got.tolist() == [3, 0, 2]


def test_unravel_index():
    indices = np.array([22, 41, 37], "int32")
    np.testing.assert_array_equal(run("unravel_index", indices, np.array([7, 6])), [[3, 6, 6], [4, 5, 1]])
    np.testing.assert_array_equal(
        run("unravel_index", np.array(17, "int64"), np.array([3, 2, 4])), np.unravel_index(17, (3, 2, 4))
    )
    # TVM's arithmetic instead of numpy's ValueError: out-of-range indices wrap, a zero dimension counts as 1.
    assert run("unravel_index", np.array([45], "int32"), np.array([7, 6])).tolist() == [[0], [3]]
    assert run("unravel_index", np.array([5], "int32"), np.array([0, 3])).tolist() == [[0], [2]]


# ---------------------------------------------------------------- numpy_impl: einsum, trilu, meshgrid


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),
        ("ii", [(3, 3)]),
        ("...i,...i->...", [(2, 3), (3,)]),
    ],
)
def test_einsum_matches_onnx_reference(equation, shapes):
    operands = [rng.normal(size=s).astype("float32") for s in shapes]
    want = onnx_ref("Einsum", operands, equation=equation)[0]
    np.testing.assert_allclose(run("einsum", operands, equation=equation), want, rtol=1e-5, atol=1e-6)
    ints = [rng.integers(-5, 5, s).astype("int32") for s in shapes]
    np.testing.assert_array_equal(run("einsum", ints, equation=equation), np.einsum(equation, *ints))


@pytest.mark.parametrize("upper", [1, 0])
def test_trilu_matches_onnx_reference(upper):
    x = rng.integers(-9, 9, (2, 4, 5)).astype("int64")
    for k in (-5, -1, 0, 2, 9):
        want = onnx_ref("Trilu", [x, np.array(k, "int64")], upper=upper)[0]
        np.testing.assert_array_equal(run("trilu", x, np.array(k, "int64"), upper=bool(upper)), want)


def test_meshgrid_matches_numpy_and_torch():
    torch = pytest.importorskip("torch")
    a, b, c = np.arange(3, dtype="float32"), np.array(7.0, "float32"), np.arange(4, dtype="float32") * 2
    for indexing in ("ij", "xy"):
        got = run("meshgrid", [a, b, c], indexing=indexing)
        for g, w in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
            np.testing.assert_array_equal(g, w)
        want = torch.meshgrid(torch.from_numpy(a), torch.from_numpy(c), indexing=indexing)
        for g, w in zip(run("meshgrid", [a, c], indexing=indexing), want):
            np.testing.assert_array_equal(g, w.numpy())
