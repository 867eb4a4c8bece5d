"""Reductions: output shapes (axis / keepdims / exclude), dtypes, errors, and numpy kernels vs hand values."""

from __future__ import annotations

import numpy as np
import pytest

from transpile.relay.expr import Call, var
from transpile.relay.op.families.reduce import logsumexp, std
from transpile.relay.op.registry import OpPattern, RelationError, get, normalize_attrs
from transpile.relay.ty import Any, TensorType


def T(shape, dtype="float32"):
    return TensorType(shape, dtype)


def rel(name, *arg_types, **attrs):
    opdef = get(name)
    return opdef.type_rel(list(arg_types), normalize_attrs(opdef, attrs))


def run(name, *arrays, **attrs):
    opdef = get(name)
    arrays = [np.asarray(a) for a in arrays]
    normalized = normalize_attrs(opdef, attrs)
    out_type = opdef.type_rel([T(a.shape, a.dtype.name) for a in arrays], normalized)
    out = opdef.numpy_impl(arrays, normalized, out_type)
    assert out.dtype == np.dtype(out_type.dtype) and out.shape == tuple(out_type.shape)
    return out


REDUCERS = ["sum", "mean", "max", "min", "prod", "all", "any"]


@pytest.mark.parametrize("name", REDUCERS)
@pytest.mark.parametrize(
    "attrs, out_shape",
    [
        ({}, ()),
        ({"axis": []}, ()),  # an empty axis list reduces everything, like axis=None
        ({"axis": [1]}, (2, 4)),
        ({"axis": 1}, (2, 4)),
        ({"axis": [-1]}, (2, 3)),
        ({"axis": [0, 2]}, (3,)),
        ({"axis": [1], "keepdims": True}, (2, 1, 4)),
        ({"axis": [1], "exclude": True}, (3,)),
        ({"axis": [0, 2], "exclude": True, "keepdims": True}, (2, 1, 4)),
        ({"keepdims": True}, (1, 1, 1)),
    ],
)
def test_reduce_shapes(name, attrs, out_shape):
    dtype = "bool" if name in ("all", "any") else "float16"
    assert rel(name, T((2, 3, 4), dtype), **attrs) == T(out_shape, dtype)
    assert get(name).pattern == OpPattern.COMM_REDUCE


def test_reduce_keeps_integer_dtype_and_any_dims():
    assert rel("mean", T((4, 5), "int32"), axis=[1]) == T((4,), "int32")
    assert rel("sum", T((Any(), 5)), axis=[1], keepdims=True) == T((Any(), 1))
    assert rel("max", T((Any(), 5)), axis=[0]) == T((5,))
    assert rel("sum", T(())) == T(())


def test_reduce_axis_attribute_conversion():
    opdef = get("sum")
    assert normalize_attrs(opdef, {"axis": 1}).axis == (1,)
    assert normalize_attrs(opdef, {"axis": [0, -1]}).axis == (0, -1)
    assert normalize_attrs(opdef, {}) == {"axis": None, "keepdims": False, "exclude": False}
    assert get("argmax").attr_names == ("axis", "keepdims", "select_last_index", "exclude")
    assert get("variance").attr_names == ("axis", "keepdims", "exclude", "unbiased")


def test_reduce_errors_name_the_type():
    with pytest.raises(RelationError, match=r"sum: axis 3 is out of bounds .* Tensor\[\(2, 3\), float32\]"):
        rel("sum", T((2, 3)), axis=[3])
    with pytest.raises(RelationError, match=r"mean: axis -3 is out of bounds"):
        rel("mean", T((2, 3)), axis=[-3])
    with pytest.raises(RelationError, match="repeated"):
        rel("sum", T((2, 3)), axis=[1, -1])
    with pytest.raises(RelationError, match=r"argmax: expects a tensor of rank >= 1, got float32"):
        rel("argmax", T(()))
    with pytest.raises(RelationError, match="expected 1 argument"):
        rel("sum", T((2,)), T((2,)))


DATA = np.array([[1, 5, 3], [4, 2, 6]], dtype="float32")


@pytest.mark.parametrize(
    "name, attrs, expected",
    [
        ("sum", {}, 21.0),
        ("sum", {"axis": [0]}, [5.0, 7.0, 9.0]),
        ("sum", {"axis": [1], "keepdims": True}, [[9.0], [12.0]]),
        ("sum", {"axis": [1], "exclude": True}, [5.0, 7.0, 9.0]),
        ("mean", {"axis": [1]}, [3.0, 4.0]),
        ("mean", {}, 3.5),
        ("max", {"axis": [1]}, [5.0, 6.0]),
        ("min", {"axis": [0]}, [1.0, 2.0, 3.0]),
        ("prod", {"axis": [1]}, [15.0, 48.0]),
        ("prod", {}, 720.0),
    ],
)
def test_reduce_float_values(name, attrs, expected):
    out = run(name, DATA, **attrs)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.array(expected, dtype="float32"))


def test_mean_of_integers_truncates_toward_zero():
    x = np.array([[1, 2], [3, 4], [-1, -2]], dtype="int32")
    out = run("mean", x, axis=[1])
    assert out.dtype == np.int32 and out.tolist() == [1, 3, -1]


def test_mean_of_float16_is_accurate():
    x = np.full((1000,), 0.1, dtype="float16")
    out = run("mean", x)
    assert out.dtype == np.float16 and abs(float(out) - 0.1) < 1e-3


def test_all_any_on_bool():
    x = np.array([[True, True, False], [True, False, False]])
    assert run("all", x, axis=[0]).tolist() == [True, False, False]
    assert run("any", x, axis=[0]).tolist() == [True, True, False]
    assert run("all", x).tolist() is False
    assert run("any", x, axis=[1], keepdims=True).tolist() == [[True], [True]]


def test_max_min_integer_and_empty_reduction():
    x = np.array([[3, -7], [2, 9]], dtype="int8")
    assert run("max", x, axis=[0]).tolist() == [3, 9]
    assert run("min", x).tolist() == -7
    empty = np.zeros((0, 2), dtype="float32")
    assert run("max", empty, axis=[0]).tolist() == [np.finfo(np.float32).min] * 2


@pytest.mark.parametrize(
    "name, attrs, expected",
    [
        ("argmax", {"axis": [1]}, [1, 2]),
        ("argmin", {"axis": [1]}, [0, 1]),
        ("argmax", {"axis": [0]}, [1, 0, 1]),
        ("argmax", {}, 5),  # flat index of 6
        ("argmin", {"axis": [1], "keepdims": True}, [[0], [1]]),
        ("argmax", {"axis": [1], "exclude": True}, [1, 0, 1]),
    ],
)
def test_arg_reductions(name, attrs, expected):
    out = run(name, DATA, **attrs)
    assert out.dtype == np.int32 and out.tolist() == expected


def test_arg_reduction_ties_and_multiple_axes():
    ties = np.array([[2, 7, 7, 1]], dtype="int32")
    assert run("argmax", ties, axis=[1]).tolist() == [1]
    assert run("argmax", ties, axis=[1], select_last_index=True).tolist() == [2]
    assert run("argmin", np.array([3, 1, 1]), select_last_index=True).tolist() == 2
    # Several reduced axes: the index is raveled over the reduced axes in their order.
    x = np.zeros((2, 3, 4), dtype="float32")
    x[0, 2, 1] = 5
    x[1, 0, 3] = 5
    assert rel("argmax", T((2, 3, 4)), axis=[1, 2]) == T((2,), "int32")
    assert run("argmax", x, axis=[1, 2]).tolist() == [2 * 4 + 1, 0 * 4 + 3]


def test_argmax_builder_takes_python_order():
    x = var("x", shape=(2, 3))
    # relay.argmax(data, axis, keepdims, exclude, select_last_index)
    call = get("argmax")(x, [1], False, True)
    assert call.attrs.exclude is True and call.attrs.select_last_index is False


def test_variance_relation_and_values():
    assert rel("variance", T((2, 3)), T((2, 1)), axis=[1]) == T((2,))
    assert rel("variance", T((2, 3)), T((1, 1)), keepdims=True) == T((1, 1))
    with pytest.raises(RelationError, match=r"variance: mean must have the rank of data"):
        rel("variance", T((2, 3)), T((2,)), axis=[1])
    with pytest.raises(RelationError, match="expected 2 argument"):
        rel("variance", T((2, 3)), axis=[1])
    x = np.array([[1.0, 3.0, 5.0], [2.0, 2.0, 2.0]], dtype="float32")
    mean = x.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(run("variance", x, mean, axis=[1]), [8 / 3, 0.0], rtol=1e-6)
    np.testing.assert_allclose(run("variance", x, mean, axis=[1], unbiased=True), [4.0, 0.0])


def test_variance_and_std_builders_compute_the_mean_like_tvm():
    x = var("x", shape=(2, 3))
    call = get("variance")(x, axis=[1], unbiased=True)
    assert call.op.name == "variance" and call.attrs.unbiased is True
    mean = call.args[1]
    assert isinstance(mean, Call) and mean.op.name == "mean" and mean.attrs.keepdims is True
    raw = get("variance")(x, mean, axis=[1])
    assert raw.args[1] is mean and raw.attrs.axis == (1,)
    s = std(x, axis=1)
    assert s.op.name == "sqrt" and s.args[0].op.name == "variance"
    lse = logsumexp(x, axis=1)
    assert lse.op.name == "squeeze" and lse.args[0].op.name == "add"


def test_cumulative_scans():
    assert rel("cumsum", T((2, 3), "int32"), axis=1) == T((2, 3), "int32")
    assert rel("cumsum", T((2, 3), "int32")) == T((6,), "int32")
    assert rel("cumprod", T((Any(), 3)), dtype="float64") == T((Any(),), "float64")
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype="int32")
    assert run("cumsum", x, axis=1).tolist() == [[1, 3, 6], [4, 9, 15]]
    assert run("cumsum", x).tolist() == [1, 3, 6, 10, 15, 21]
    assert run("cumsum", x, axis=0, exclusive=True).tolist() == [[0, 0, 0], [1, 2, 3]]
    assert run("cumprod", x, axis=1, exclusive=True).tolist() == [[1, 1, 2], [1, 4, 20]]
    assert run("cumprod", x, axis=-1, dtype="int64").tolist() == [[1, 2, 6], [4, 20, 120]]
    call = get("cumsum")(var("x", shape=(2,)), 0, None, None)
    assert call.attrs.exclusive is False and call.attrs.dtype is None and call.attrs.axis == 0
    with pytest.raises(RelationError, match="cumsum: axis 2 is out of range"):
        rel("cumsum", T((2, 3)), axis=2)
