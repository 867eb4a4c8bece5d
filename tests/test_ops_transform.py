"""Transform operators: reshape codes, transpose, squeeze, joins, split, take, strided_slice, creation..."""

from __future__ import annotations

import numpy as np
import pytest

from transpile.relay.expr import Call, Constant, Tuple, const, var
from transpile.relay.op.registry import OpPattern, RelationError, get, normalize_attrs
from transpile.relay.ty import Any, TensorType, TupleType


def T(shape, dtype="float32"):
    return TensorType(shape, dtype)


def rel(name, *arg_types, **attrs):
    opdef = get(name)
    return opdef.type_rel(list(arg_types), normalize_attrs(opdef, attrs))


def type_of(value):
    if isinstance(value, (tuple, list)):
        return TupleType([type_of(v) for v in value])
    value = np.asarray(value)
    return T(value.shape, value.dtype.name)


def run(name, *args, **attrs):
    opdef = get(name)
    args = [tuple(np.asarray(a) for a in x) if isinstance(x, (tuple, list)) else np.asarray(x) for x in args]
    normalized = normalize_attrs(opdef, attrs)
    out_type = opdef.type_rel([type_of(a) for a in args], normalized)
    out = opdef.numpy_impl(args, normalized, out_type)
    if isinstance(out_type, TensorType):
        assert out.dtype == np.dtype(out_type.dtype) and out.shape == tuple(out_type.shape)
    return out


# ---------------------------------------------------------------- reshape

RESHAPE_CASES = [
    # The examples of TVM's reshape documentation.
    ((2, 3, 4), [4, 0, 2], (4, 3, 2)),
    ((2, 3, 4), [2, 0, 0], (2, 3, 4)),
    ((2, 3, 4), [6, 1, -1], (6, 1, 4)),
    ((2, 3, 4), [3, -1, 8], (3, 1, 8)),
    ((2, 3, 4), [-1], (24,)),
    ((2, 3, 4), [-2], (2, 3, 4)),
    ((2, 3, 4), [2, -2], (2, 3, 4)),
    ((2, 3, 4), [-2, 1, 1], (2, 3, 4, 1, 1)),
    ((2, 3, 4), [-3, 4], (6, 4)),
    ((2, 3, 4, 5), [-3, -3], (6, 20)),
    ((2, 3, 4), [0, -3], (2, 12)),
    ((2, 3, 4), [-3, -2], (6, 4)),
    ((2, 3, 4), [-4, 1, 2, -2], (1, 2, 3, 4)),
    ((2, 3, 4), [2, -4, -1, 3, -2], (2, 1, 3, 4)),
    ((50, 32, 768), [-1, 768], (1600, 768)),
    ((6,), [0, -1], (6, 1)),
    ((), [1], (1,)),
    ((Any(), 4), [-1, 2], (Any(), 2)),
    ((Any(), 4), [0, 2, 2], (Any(), 2, 2)),
    ((Any(), 4), [-3], (Any(),)),
]


@pytest.mark.parametrize("shape, newshape, out", RESHAPE_CASES)
def test_reshape_relation(shape, newshape, out):
    assert rel("reshape", T(shape), newshape=newshape) == T(out)
    assert get("reshape").pattern == OpPattern.INJECTIVE


def test_reshape_values_and_attrs():
    x = np.arange(24, dtype="int32").reshape(2, 3, 4)
    out = run("reshape", x, newshape=[-4, 1, 2, -2])
    assert out.shape == (1, 2, 3, 4) and out.ravel().tolist() == list(range(24))
    assert normalize_attrs(get("reshape"), {"newshape": 5}).newshape == (5,)
    assert normalize_attrs(get("reshape"), {"newshape": [2, 3]}) == {"newshape": (2, 3), "allowzero": False}
    # allowzero: 0 is a real (empty) dimension.
    assert rel("reshape", T((0, 3)), newshape=[0, 3], allowzero=True) == T((0, 3))


@pytest.mark.parametrize(
    "shape, newshape, message",
    [
        ((2, 3), [4, 2], r"reshape: cannot reshape Tensor\[\(2, 3\), float32\] to \(4, 2\)"),
        ((2, 3), [-1, -1], "more than one -1"),
        ((2,), [0, 0], "copies dimension 1"),
        ((2, 3), [-3, -3], "-3 .* needs two more input dimensions"),
        ((2, 3), [-4, -1, -1, 3], "cannot both be -1"),
        ((2, 3), [-5], "unsupported special value -5"),
        ((2, 3), [5, -1], r"cannot reshape .* to \(5, 1\)"),
    ],
)
def test_reshape_errors(shape, newshape, message):
    with pytest.raises(RelationError, match=message):
        rel("reshape", T(shape), newshape=newshape)


def test_reshape_with_unknown_input_recomputes_shape_at_run_time():
    opdef = get("reshape")
    attrs = normalize_attrs(opdef, {"newshape": [-1, 2]})
    out_type = opdef.type_rel([T((Any(), 4))], attrs)
    out = opdef.numpy_impl([np.zeros((3, 4), "float32")], attrs, out_type)
    assert out.shape == (6, 2)


def test_reverse_reshape_and_reshape_like():
    # (10, 5, 4) with (-1, 0): reshape copies dim 1 -> (40, 5); reverse_reshape matches from the right -> (50, 4).
    assert rel("reshape", T((10, 5, 4)), newshape=[-1, 0]) == T((40, 5))
    assert rel("contrib_reverse_reshape", T((10, 5, 4)), newshape=[-1, 0]) == T((50, 4))
    assert rel("reshape_like", T((1, 2, 3, 4)), T((6, 2, 2, 3)), lhs_begin=1, rhs_end=3) == T((1, 6, 2, 2))
    assert rel("reshape_like", T((2, 3)), T((3, 2))) == T((3, 2))
    with pytest.raises(RelationError, match="reshape_like: cannot reshape"):
        rel("reshape_like", T((2, 3)), T((4,)))
    out = run("reshape_like", np.arange(6, dtype="float32"), np.zeros((3, 2), "int8"))
    assert out.tolist() == [[0, 1], [2, 3], [4, 5]]


# ---------------------------------------------------------------- transpose, squeeze, expand_dims


def test_transpose():
    assert rel("transpose", T((2, 3, 4)), axes=[0, 2, 1]) == T((2, 4, 3))
    assert rel("transpose", T((2, 3, 4))) == T((4, 3, 2))
    assert rel("transpose", T((2, Any())), axes=[-1, 0]) == T((Any(), 2))
    x = np.arange(6, dtype="float32").reshape(2, 3)
    assert run("transpose", x).tolist() == [[0, 3], [1, 4], [2, 5]]
    assert run("transpose", x, axes=[1, 0]).tolist() == [[0, 3], [1, 4], [2, 5]]
    with pytest.raises(RelationError, match="axes \\[0\\] has 1 elements, but the data has rank 2"):
        rel("transpose", T((2, 3)), axes=[0])
    with pytest.raises(RelationError, match="repeated"):
        rel("transpose", T((2, 3)), axes=[0, -2])
    with pytest.raises(RelationError, match="out of range"):
        rel("transpose", T((2, 3)), axes=[0, 2])


def test_squeeze():
    assert rel("squeeze", T((1, 3, 1, 2))) == T((3, 2))
    assert rel("squeeze", T((1, 3, 1, 2)), axis=[2]) == T((1, 3, 2))
    assert rel("squeeze", T((1, 3, 1)), axis=[-1, 0]) == T((3,))
    assert rel("squeeze", T((Any(), 1)), axis=[1]) == T((Any(),))
    assert rel("squeeze", T((1,), "bool")) == T((), "bool")
    assert run("squeeze", np.array([[[7.0]]], "float32")).tolist() == 7.0
    with pytest.raises(
        RelationError, match=r"cannot squeeze axis 1 of Tensor\[\(1, 3\), float32\]: its dimension is 3"
    ):
        rel("squeeze", T((1, 3)), axis=[1])
    with pytest.raises(RelationError, match="axis must be given"):
        rel("squeeze", T((Any(), 1)))


@pytest.mark.parametrize(
    "axis, num, out",
    [
        (0, 1, (1, 2, 3)),
        (1, 1, (2, 1, 3)),
        (2, 1, (2, 3, 1)),
        (-1, 1, (2, 3, 1)),
        (-3, 1, (1, 2, 3)),
        (1, 2, (2, 1, 1, 3)),
        (0, 0, (2, 3)),
    ],
)
def test_expand_dims(axis, num, out):
    assert rel("expand_dims", T((2, 3)), axis=axis, num_newaxis=num) == T(out)
    assert run("expand_dims", np.zeros((2, 3), "int32"), axis=axis, num_newaxis=num).shape == out


def test_expand_dims_errors():
    with pytest.raises(RelationError, match=r"expand_dims: axis 3 is out of range \[-3, 2\]"):
        rel("expand_dims", T((2, 3)), axis=3)
    with pytest.raises(ValueError, match="requires attribute 'axis'"):
        normalize_attrs(get("expand_dims"), {})


# ---------------------------------------------------------------- concatenate, stack, split


def test_concatenate_relation():
    tup = TupleType([T((2, 3)), T((4, 3))])
    assert rel("concatenate", tup) == T((6, 3))
    assert rel("concatenate", TupleType([T((2, 3)), T((2, 5))]), axis=-1) == T((2, 8))
    # TVM's rules for unknown dims: [(?, 3), (?, ?)] -> (?, 3); [(1, 3), (1, ?)] on axis 1 -> (1, ?).
    assert rel("concatenate", TupleType([T((Any(), 3)), T((Any(), Any()))])) == T((Any(), 3))
    assert rel("concatenate", TupleType([T((1, 3)), T((1, Any()))]), axis=1) == T((1, Any()))
    assert rel("concatenate", TupleType([T((1, 3)), T((Any(), 3))]), axis=1) == T((Any(), 6))
    with pytest.raises(RelationError, match="must agree on every axis but 0"):
        rel("concatenate", TupleType([T((2, 3)), T((2, 4))]))
    with pytest.raises(RelationError, match="same dtype"):
        rel("concatenate", TupleType([T((2,)), T((2,), "int32")]))
    with pytest.raises(RelationError, match="same rank"):
        rel("concatenate", TupleType([T((2,)), T((2, 1))]))
    with pytest.raises(RelationError, match="out of range"):
        rel("concatenate", TupleType([T(()), T(())]))
    with pytest.raises(RelationError, match="expected a tuple of tensors, got Tensor"):
        rel("concatenate", T((2,)))
    assert get("concatenate").tuple_input


def test_concatenate_and_stack_values():
    a = np.array([[1, 2]], "int32")
    b = np.array([[3, 4]], "int32")
    assert run("concatenate", (a, b)).tolist() == [[1, 2], [3, 4]]
    assert run("concatenate", (a, b), axis=1).tolist() == [[1, 2, 3, 4]]
    assert run("stack", (a[0], b[0])).tolist() == [[1, 2], [3, 4]]
    assert run("stack", (a[0], b[0]), axis=-1).tolist() == [[1, 3], [2, 4]]
    assert rel("stack", TupleType([T((2, 3))] * 4), axis=1) == T((2, 4, 3))
    with pytest.raises(RelationError, match="stack: all tensors must have the same shape"):
        rel("stack", TupleType([T((2,)), T((3,))]))
    call = get("concatenate")([var("x", shape=(1,)), var("y", shape=(1,))], axis=0)
    assert isinstance(call.args[0], Tuple)


def test_split_types_are_tuples():
    assert rel("split", T((50, 32, 2304)), indices_or_sections=[768, 1536], axis=2) == TupleType([T((50, 32, 768))] * 3)
    assert rel("split", T((6, 4)), indices_or_sections=3) == TupleType([T((2, 4))] * 3)
    assert rel("split", T((Any(), 4)), indices_or_sections=2) == TupleType([T((Any(), 4))] * 2)
    assert rel("split", T((Any(), 4)), indices_or_sections=[1]) == TupleType([T((1, 4)), T((Any(), 4))])
    assert rel("split", T((5,)), indices_or_sections=[1, 3], axis=-1) == TupleType([T((1,)), T((2,)), T((2,))])
    attrs = normalize_attrs(get("split"), {"indices_or_sections": [1, 2]})
    assert attrs.indices_or_sections == (1, 2) and attrs.axis == 0
    assert normalize_attrs(get("split"), {"indices_or_sections": 3}).indices_or_sections == 3


@pytest.mark.parametrize(
    "shape, spec, message",
    [
        ((7,), 2, "2 sections do not divide"),
        ((7,), [3, 2], "strictly ascending"),
        ((7,), [0, 2], "strictly ascending"),
        ((7,), [3, 7], "past the end"),
        ((), 1, "cannot split a scalar"),
    ],
)
def test_split_errors(shape, spec, message):
    with pytest.raises(RelationError, match=message):
        rel("split", T(shape), indices_or_sections=spec)


def test_split_values():
    x = np.arange(6, dtype="float32")
    parts = run("split", x, indices_or_sections=[1, 4])
    assert isinstance(parts, tuple) and [p.tolist() for p in parts] == [[0], [1, 2, 3], [4, 5]]
    parts = run("split", x.reshape(2, 3), indices_or_sections=3, axis=1)
    assert [p.tolist() for p in parts] == [[[0], [3]], [[1], [4]], [[2], [5]]]


# ---------------------------------------------------------------- take, gather


def test_take_relation():
    assert rel("take", T((4, 5)), T((2, 3), "int32")) == T((2, 3))
    assert rel("take", T((4, 5)), T((2,), "int64"), axis=0) == T((2, 5))
    assert rel("take", T((4, 5, 6)), T((7,), "int32"), axis=-2) == T((4, 7, 6))
    assert rel("take", T((4, 5, 6)), T((4, 7), "int32"), axis=1, batch_dims=1) == T((4, 7, 6))
    with pytest.raises(
        RelationError, match=r"take: indices must be a tensor of integers, got Tensor\[\(2\), float32\]"
    ):
        rel("take", T((4,)), T((2,)))
    with pytest.raises(RelationError, match="batch_dims 2 must be <= axis 1"):
        rel("take", T((4, 5)), T((4, 2), "int32"), axis=1, batch_dims=2)
    with pytest.raises(RelationError, match="axis 2 is out of range"):
        rel("take", T((4, 5)), T((2,), "int32"), axis=2)


def test_take_values_and_modes():
    a = np.array([[1, 2], [3, 4]], "float32")
    assert run("take", a, np.array([3, 0, 2], "int32")).tolist() == [4, 1, 3]
    assert run("take", a, np.array([1, 0], "int32"), axis=1).tolist() == [[2, 1], [4, 3]]
    # clip clamps (negative indices go to 0), wrap is modular.
    idx = np.array([-1, 5], "int32")
    assert run("take", np.array([10, 20, 30], "int32"), idx, axis=0).tolist() == [10, 30]
    assert run("take", np.array([10, 20, 30], "int32"), idx, axis=0, mode="wrap").tolist() == [30, 30]
    data = np.arange(12, dtype="int32").reshape(2, 6)
    out = run("take", data, np.array([[0, 5], [1, 1]], "int32"), axis=1, batch_dims=1)
    assert out.tolist() == [[0, 5], [7, 7]]


def test_take_builder_uses_python_argument_order():
    call = get("take")(var("x", shape=(3, 4)), var("i", shape=(2,), dtype="int32"), 1)
    assert call.attrs.axis == 1 and call.attrs.batch_dims == 0 and call.attrs.mode == "clip"
    assert get("take").attr_names == ("batch_dims", "axis", "mode")


def test_gather():
    data = np.array([[1, 2], [3, 4]], "float32")
    idx = np.array([[0, 0], [1, 0]], "int64")
    assert rel("gather", T((2, 2)), T((2, 2), "int64"), axis=1) == T((2, 2))
    assert run("gather", data, idx, axis=1).tolist() == [[1, 1], [4, 3]]
    with pytest.raises(RelationError, match="same rank"):
        rel("gather", T((2, 2)), T((2,), "int32"), axis=0)
    call = get("gather")(var("d", shape=(2, 2)), 1, var("i", shape=(2, 2), dtype="int64"))
    assert call.attrs.axis == 1 and len(call.args) == 2


# ---------------------------------------------------------------- strided_slice

SLICE_CASES = [
    # (shape, attrs, out shape, numpy expression on x = arange(prod(shape)).reshape(shape))
    ((3, 4), dict(begin=[0, 1], end=[2, 4]), (2, 3), lambda x: x[0:2, 1:4]),
    ((3, 4), dict(begin=[1], end=[3]), (2, 4), lambda x: x[1:3]),
    ((3, 4), dict(begin=[-2, -3], end=[100, -1]), (2, 2), lambda x: x[1:3, 1:3]),
    ((3, 4), dict(begin=[0, 0], end=[3, 4], strides=[2, 3]), (2, 2), lambda x: x[0:3:2, 0:4:3]),
    ((5,), dict(begin=[4], end=[0], strides=[-1]), (4,), lambda x: x[4:0:-1]),
    ((5,), dict(begin=[10], end=[-10], strides=[-2]), (3,), lambda x: x[4::-2]),
    ((5,), dict(begin=[-1], end=[-6], strides=[-1]), (5,), lambda x: x[::-1]),
    ((3, 4), dict(begin=[1, 1], end=[2, -1], slice_mode="size"), (2, 3), lambda x: x[1:3, 1:4]),
    ((3, 4), dict(begin=[1], end=[2], axes=[1]), (3, 1), lambda x: x[:, 1:2]),
    ((3, 4), dict(begin=[0, 1], end=[1, 3], strides=[1, 1], axes=[-1, 0]), (2, 1), lambda x: x[1:3, 0:1]),
    ((1, 384, 128), dict(begin=[0, 1, 0], end=[1, 384, 128], strides=[1, 1, 1]), (1, 383, 128), lambda x: x[:, 1:]),
    ((3, 4), dict(begin=[2], end=[2]), (0, 4), lambda x: x[2:2]),
]


@pytest.mark.parametrize("shape, attrs, out, expected", SLICE_CASES)
def test_strided_slice(shape, attrs, out, expected):
    assert rel("strided_slice", T(shape), **attrs) == T(out)
    x = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    np.testing.assert_array_equal(run("strided_slice", x, **attrs), expected(x))


def test_strided_slice_unknown_dims_and_errors():
    assert rel("strided_slice", T((Any(), 4)), begin=[0, 1], end=[2, 3]) == T((Any(), 2))
    with pytest.raises(
        RelationError, match=r"begin=3, end=1, stride=1 is an invalid slice of axis 0 of Tensor\[\(5\), float32\]"
    ):
        rel("strided_slice", T((5,)), begin=[3], end=[1])
    with pytest.raises(RelationError, match="must not be 0"):
        rel("strided_slice", T((5,)), begin=[0], end=[1], strides=[0])
    with pytest.raises(RelationError, match="same length"):
        rel("strided_slice", T((5, 5)), begin=[0, 0], end=[1, 1], axes=[0, 1])
    attrs = normalize_attrs(get("strided_slice"), {"begin": [0], "end": [1]})
    assert attrs.strides == (1,) and attrs.axes is None and attrs.slice_mode == "end"
    assert get("strided_slice").extras["always_print"] == ("strides", "axes")
    # relay.strided_slice(data, begin, end, strides=None, axes=None, slice_mode="end") turned None into [1].
    call = get("strided_slice")(var("x", shape=(4, 4)), [0], [2], None, [1])
    assert call.attrs.strides == (1,) and call.attrs.axes == (1,) and call.attrs.slice_mode == "end"


# ---------------------------------------------------------------- tile, repeat, reverse, slice_like


def test_tile_repeat_reverse():
    assert rel("tile", T((2, 3)), reps=[2, 2]) == T((4, 6))
    assert rel("tile", T((2, 3)), reps=[3]) == T((2, 9))
    assert rel("tile", T((3,)), reps=[2, 1]) == T((2, 3))
    assert rel("tile", T((Any(), 3)), reps=[2, 2]) == T((Any(), 6))
    assert run("tile", np.array([1, 2], "int32"), reps=[2, 2]).tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]
    with pytest.raises(RelationError, match="must be positive"):
        rel("tile", T((2,)), reps=[0])
    assert rel("repeat", T((2, 3)), repeats=2, axis=1) == T((2, 6))
    assert run("repeat", np.array([[1, 2]], "int32"), repeats=2, axis=-1).tolist() == [[1, 1, 2, 2]]
    with pytest.raises(RelationError, match="repeats must be >= 1"):
        rel("repeat", T((2,)), repeats=0, axis=0)
    assert rel("reverse", T((2, 3)), axis=1) == T((2, 3))
    assert run("reverse", np.array([[1, 2, 3]], "int32"), axis=1).tolist() == [[3, 2, 1]]
    with pytest.raises(RelationError, match="axis 2 is out of range"):
        rel("reverse", T((2, 3)), axis=2)


def test_slice_like():
    assert rel("slice_like", T((3, 4, 5)), T((2, 3))) == T((2, 3, 5))
    assert rel("slice_like", T((3, 4, 5)), T((1, 2, 3)), axes=[-1]) == T((3, 4, 3))
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(run("slice_like", x, np.zeros((2, 2), "int8")), x[:2, :2])
    with pytest.raises(RelationError, match="exceeds"):
        rel("slice_like", T((2, 2)), T((3, 2)))


# ---------------------------------------------------------------- creation


def test_zeros_ones_full():
    assert rel("zeros", shape=[2, 3], dtype="int32") == T((2, 3), "int32")
    assert run("ones", shape=[2], dtype="float16").tolist() == [1.0, 1.0]
    assert run("zeros", shape=[], dtype="bool").tolist() is False
    assert normalize_attrs(get("zeros"), {"shape": 3, "dtype": "float"}) == {"shape": (3,), "dtype": "float32"}
    assert rel("full", T((), "int8"), shape=[2]) == T((2,), "int8")
    assert rel("full", T(()), shape=[2], dtype="float16") == T((2,), "float16")
    out = run("full", np.float32(2.5), shape=[2, 2], dtype="int32")
    assert out.dtype == np.int32 and out.tolist() == [[2, 2], [2, 2]]
    with pytest.raises(RelationError, match=r"full: the fill value must be a scalar, got Tensor\[\(2\), float32\]"):
        rel("full", T((2,)), shape=[2])
    assert normalize_attrs(get("full"), {"shape": [1], "dtype": ""}).dtype is None
    assert rel("full_like", T((2, 3), "int32"), T((), "int32")) == T((2, 3), "int32")
    assert run("full_like", np.zeros((2,), "float32"), np.float32(7)).tolist() == [7.0, 7.0]
    assert get("zeros").num_inputs == 0 and get("zeros").pattern == OpPattern.ELEMWISE


def test_arange():
    call = get("arange")(1, 10, 3, dtype="int32")
    assert len(call.args) == 3 and all(isinstance(a, Constant) for a in call.args)
    # Attributes hold the constant bounds' values (never the expressions), so printers and backends see numbers.
    assert (call.attrs.start, call.attrs.stop, call.attrs.step, call.attrs.dtype) == (1, 10, 3, "int32")
    opdef = get("arange")
    scalar = T((), "int32")
    assert opdef.type_rel([scalar] * 3, call.attrs) == T((3,), "int32")
    out = opdef.numpy_impl([np.int32(1), np.int32(10), np.int32(3)], call.attrs, T((3,), "int32"))
    assert out.tolist() == [1, 4, 7]
    stop_only = get("arange")(5.0)
    assert stop_only.attrs.dtype == "float32"
    assert opdef.type_rel([T(())] * 3, stop_only.attrs) == T((5,))
    # Printed text carries the bounds as literals; parsed back they still give a static length.
    literal = normalize_attrs(opdef, {"start": 0, "stop": 2.5, "step": 0.5, "dtype": "float32"})
    assert opdef.type_rel([T(())] * 3, literal) == T((5,))
    dynamic = normalize_attrs(opdef, {"dtype": "float32"})
    assert opdef.type_rel([T(())] * 3, dynamic) == T((Any(),))
    with pytest.raises(RelationError, match="arange: stop must be a float32 scalar, got int32"):
        opdef.type_rel([T(()), scalar, T(())], dynamic)
    empty = normalize_attrs(opdef, {"start": const(5.0), "stop": const(1.0), "step": const(1.0), "dtype": "float32"})
    with pytest.raises(RelationError, match="empty range"):
        opdef.type_rel([T(())] * 3, empty)


def test_one_hot():
    assert rel("one_hot", T((3,), "int32"), T(()), T(()), depth=4) == T((3, 4))
    assert rel("one_hot", T((3, 2), "int32"), T((), "int32"), T((), "int32"), depth=5, axis=0, dtype="int8") == T(
        (5, 3, 2), "int8"
    )
    out = run("one_hot", np.array([0, 2], "int32"), np.float32(1), np.float32(0), depth=3)
    assert out.tolist() == [[1, 0, 0], [0, 0, 1]]
    out = run("one_hot", np.array([1, 0], "int32"), np.int32(5), np.int32(-1), depth=2, axis=0, dtype="int32")
    assert out.tolist() == [[-1, 5], [5, -1]]
    with pytest.raises(RelationError, match="depth must be positive"):
        rel("one_hot", T((3,), "int32"), T(()), T(()), depth=0)


def test_shape_of_and_ndarray_size():
    assert rel("shape_of", T((2, Any(), 4))) == T((3,), "int32")
    assert rel("shape_of", T((2,)), dtype="int64") == T((1,), "int64")
    assert run("shape_of", np.zeros((2, 5), "float32")).tolist() == [2, 5]
    assert get("shape_of").pattern == OpPattern.OPAQUE
    assert rel("ndarray_size", T((2, 3)), dtype="int64") == T((), "int64")
    assert run("ndarray_size", np.zeros((2, 5), "float32")).tolist() == 10


def test_broadcast_to_and_like():
    assert rel("broadcast_to", T((3, 1)), shape=[2, 3, 4]) == T((2, 3, 4))
    assert run("broadcast_to", np.array([1, 2], "int32"), shape=[2, 2]).tolist() == [[1, 2], [1, 2]]
    with pytest.raises(RelationError, match=r"broadcast_to: cannot broadcast Tensor\[\(3, 2\), float32\] to \(3, 1\)"):
        rel("broadcast_to", T((3, 2)), shape=[3, 1])
    with pytest.raises(RelationError, match="not broadcastable"):
        rel("broadcast_to", T((3,)), shape=[4])
    assert rel("broadcast_to_like", T((1, 3)), T((2, 3))) == T((2, 3))
    assert run("broadcast_to_like", np.array([5.0], "float32"), np.zeros((3,), "float32")).tolist() == [5, 5, 5]
    assert rel("dyn.broadcast_to", T((1, 3)), T((2,), "int64")) == T((Any(), Any()))
    out = get("dyn.broadcast_to").numpy_impl(
        [np.array([1.0], "float32"), np.array([2, 2], "int64")],
        normalize_attrs(get("dyn.broadcast_to"), {}),
        T((Any(), Any())),
    )
    assert out.tolist() == [[1, 1], [1, 1]]


def test_collapse_sum_like():
    assert rel("collapse_sum_like", T((2, 3, 4)), T((3, 1))) == T((3, 1))
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    expected = x.sum(axis=0).sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(run("collapse_sum_like", x, np.zeros((3, 1), "float32")), expected)
    assert run("collapse_sum_like", x, np.float32(0)).tolist() == float(x.sum())
    with pytest.raises(RelationError, match="does not broadcast to"):
        rel("collapse_sum_like", T((3,)), T((2, 3)))
    with pytest.raises(RelationError, match="dtypes must agree"):
        rel("collapse_sum_like", T((3,)), T((3,), "int32"))
    assert get("collapse_sum_like").pattern == OpPattern.COMM_REDUCE


# ---------------------------------------------------------------- layout_transform


def test_layout_transform_permutations():
    assert rel("layout_transform", T((1, 3, 8, 9)), src_layout="NCHW", dst_layout="NHWC") == T((1, 8, 9, 3))
    assert rel("layout_transform", T((16, 3, 5, 7)), src_layout="OIHW", dst_layout="OHWI") == T((16, 5, 7, 3))
    x = np.arange(2 * 3 * 4 * 5, dtype="float32").reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(
        run("layout_transform", x, src_layout="NCHW", dst_layout="NHWC"), x.transpose(0, 2, 3, 1)
    )


def test_layout_transform_packed_layouts():
    assert rel("layout_transform", T((1, 8, 5, 5)), src_layout="NCHW", dst_layout="NCHW4c") == T((1, 2, 5, 5, 4))
    assert rel("layout_transform", T((1, 2, 5, 5, 4)), src_layout="NCHW4c", dst_layout="NCHW") == T((1, 8, 5, 5))
    assert rel("layout_transform", T((8, 4, 3, 3)), src_layout="OIHW", dst_layout="OIHW4i4o") == T((2, 1, 3, 3, 4, 4))
    x = np.arange(1 * 8 * 2 * 3, dtype="int32").reshape(1, 8, 2, 3)
    packed = run("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")
    # output[n, C, h, w, c] = data[n, C*4 + c, h, w]
    for C in range(2):
        for c in range(4):
            np.testing.assert_array_equal(packed[:, C, :, :, c], x[:, C * 4 + c])
    np.testing.assert_array_equal(run("layout_transform", packed, src_layout="NCHW4c", dst_layout="NCHW"), x)
    w = np.arange(8 * 4 * 1 * 1, dtype="float32").reshape(8, 4, 1, 1)
    blocked = run("layout_transform", w, src_layout="OIHW", dst_layout="OIHW4i4o")
    assert blocked[1, 0, 0, 0, 2, 3] == w[1 * 4 + 3, 0 * 4 + 2, 0, 0]


@pytest.mark.parametrize(
    "shape, src, dst, message",
    [
        ((1, 3, 4, 4), "NCHW", "NCHW4c", "C=3 is not divisible by 4"),
        ((1, 3, 4, 4), "NCHW", "NCDHW", "cannot convert from NCHW to NCDHW"),
        ((1, 3, 4), "NCHW", "NHWC", "layout NCHW has 4 axes"),
        ((1, 3, 4, 4), "NCHW", "NCHWc", "invalid layout 'NCHWc'"),
        ((1, 3, 4, 4), "NCHW", "NCHW4C", "primal axis C cannot have a factor"),
        ((1, 3, 4, 4), "NCHW", "", "undefined layout"),
    ],
)
def test_layout_transform_errors(shape, src, dst, message):
    with pytest.raises(RelationError, match=message):
        rel("layout_transform", T(shape), src_layout=src, dst_layout=dst)


def test_patterns_follow_tvm():
    expected = {
        "reshape": OpPattern.INJECTIVE,
        "transpose": OpPattern.INJECTIVE,
        "expand_dims": OpPattern.BROADCAST,
        "squeeze": OpPattern.INJECTIVE,
        "concatenate": OpPattern.INJECTIVE,
        "split": OpPattern.INJECTIVE,
        "take": OpPattern.INJECTIVE,
        "strided_slice": OpPattern.INJECTIVE,
        "broadcast_to": OpPattern.BROADCAST,
        "tile": OpPattern.BROADCAST,
        "repeat": OpPattern.BROADCAST,
        "full": OpPattern.ELEMWISE,
        "arange": OpPattern.OPAQUE,
        "one_hot": OpPattern.OUT_ELEMWISE_FUSABLE,
        "layout_transform": OpPattern.INJECTIVE,
        "where": OpPattern.BROADCAST,
    }
    assert {name: get(name).pattern for name in expected} == expected


def test_transpose_axes_always_printed_like_tvm():
    # TransposeAttrs.axes had no C++ default, so TVM printed `axes=None`; the printer reads this.
    assert get("transpose").extras["always_print"] == ("axes",)
    call = get("transpose")(var("x", shape=(2, 3)))
    assert isinstance(call, Call) and call.attrs.axes is None
