"""ONNX converters of the non-NN default-domain operators, each opset variant against onnx's ReferenceEvaluator.

Every case is a tiny onnx.helper graph. Inputs named in `consts` become initializers (shapes,
axes, indices the importer needs at compile time); the others are graph inputs fed at run time.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import transpile  # noqa: E402
from transpile.relay.frontend import FrontendError, UnsupportedOperatorsError, from_onnx  # noqa: E402
from transpile.relay.printer import astext  # noqa: E402

RNG = np.random.default_rng(7)


def _f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _i64(*values):
    return np.array(values, dtype="int64")


def _make_model(nodes, feeds, consts=None, outputs=None, opset=18, input_shapes=None):
    consts = consts or {}
    input_shapes = input_shapes or {}
    inputs = [
        helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(value.dtype), input_shapes.get(name, value.shape)
        )
        for name, value in feeds.items()
    ]
    initializers = [onnx.numpy_helper.from_array(np.asarray(v), name) for name, v in consts.items()]
    if outputs is None:
        outputs = [o for o in nodes[-1].output if o]
    output_infos = [helper.make_value_info(name, onnx.TypeProto()) for name in outputs]
    graph = helper.make_graph(nodes, "g", inputs, output_infos, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _as_list(value):
    if isinstance(value, (list, tuple)):
        return [np.asarray(v) for v in value]
    return [np.asarray(value)]


def check(
    nodes, feeds, consts=None, opset=18, outputs=None, backend="interpreter", expected=None, rtol=1e-5, atol=1e-6
):
    """Import, compile, run on `feeds` and compare every output with the reference (or `expected`)."""
    model = _make_model(nodes, feeds, consts, outputs, opset)
    if expected is None:
        expected = ReferenceEvaluator(model).run(None, feeds)
    mod, params = from_onnx(model)
    result = transpile.compile(mod, backend=backend)(*feeds.values())
    got = [result] if len(expected) == 1 else list(result)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, list):  # a sequence output is a tuple of tensors
            g = list(g)
            assert len(g) == len(e)
            pairs = list(zip(g, e))
        else:
            pairs = [(g, e)]
        for one, other in pairs:
            one, other = np.asarray(one), np.asarray(other)
            assert one.shape == other.shape, (one.shape, other.shape)
            assert one.dtype == other.dtype, (one.dtype, other.dtype)
            if other.dtype.kind == "f":
                np.testing.assert_allclose(one, other, rtol=rtol, atol=atol, equal_nan=True)
            else:
                np.testing.assert_array_equal(one, other)
    return mod


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


# ---------------------------------------------------------------------- elementwise


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_arithmetic_broadcasts(op):
    check([node(op, ["a", "b"])], {"a": _f32(2, 3, 4), "b": _f32(4) + 3})


def test_integer_div_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 0], "int32")
    b = np.array([2, 2, -2, -2, 3], "int32")
    check([node("Div", ["a", "b"])], {"a": a, "b": b})


def test_legacy_broadcast_with_axis():
    a, b = _f32(2, 3, 4), _f32(3)
    check([node("Add", ["a", "b"], broadcast=1, axis=1)], {"a": a, "b": b}, opset=6, expected=[a + b[:, None]])


@pytest.mark.parametrize(
    "base, exponent",
    [
        (np.abs(_f32(3, 4)), np.array([2, 3, 0, 1], "int64")),
        (np.array([2, 3, -4], "int32"), np.array([2.0, 3.0, 2.0], "float32")),
        (np.abs(_f32(5)), _f32(5)),
    ],
)
def test_pow_with_mixed_types(base, exponent):
    check([node("Pow", ["a", "b"])], {"a": base, "b": exponent})


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod(fmod):
    a = np.array([5, -5, 5, -5, 7], "int64")
    b = np.array([3, 3, -3, -3, 7], "int64")
    check([node("Mod", ["a", "b"], fmod=fmod)], {"a": a, "b": b})
    x = np.array([5.5, -5.5, 5.5, -5.5, 2.0, -2.0, np.inf], "float32")
    y = np.array([3.0, 3.0, -3.0, -3.0, np.inf, np.inf, 2.0], "float32")
    if fmod:
        check([node("Mod", ["a", "b"], fmod=1)], {"a": x, "b": y})
    else:  # the reference (np.mod) warns on inf; ONNX's special cases say x or y
        check(
            [node("Mod", ["a", "b"])],
            {"a": x, "b": y},
            expected=[np.array([2.5, 0.5, -0.5, -2.5, 2.0, np.inf, np.nan], "float32")],
        )


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift(direction):
    x = np.array([16, 4, 1, 255], "uint8")
    y = np.array([1, 2, 3, 1], "uint8")
    check([node("BitShift", ["x", "y"], direction=direction)], {"x": x, "y": y}, opset=11)
    signed = np.array([-16, 64, -1, 5, 5], "int8")
    shifts = np.array([1, 2, 9, -1, 8], "int8")
    check([node("BitShift", ["x", "y"], direction=direction)], {"x": signed, "y": shifts}, opset=28)


_UNARY_INPUTS = {
    "Neg": _f32(3, 4),
    "Abs": _f32(3, 4),
    "Sign": np.array([-2.0, 0.0, 3.0], "float32"),
    "Reciprocal": _f32(4) + 5,
    "Floor": _f32(5) * 3,
    "Ceil": _f32(5) * 3,
    "Round": np.array([0.5, 1.5, 2.5, -0.5, -1.4, 2.6], "float32"),
    "Sqrt": np.abs(_f32(5)),
    "Exp": _f32(5),
    "Log": np.abs(_f32(5)) + 0.1,
    "Erf": _f32(5),
    "Sin": _f32(5),
    "Cos": _f32(5),
    "Tan": _f32(5),
    "Asin": np.tanh(_f32(5)),
    "Acos": np.tanh(_f32(5)),
    "Atan": _f32(5),
    "Sinh": _f32(5),
    "Cosh": _f32(5),
    "Asinh": _f32(5),
    "Acosh": np.abs(_f32(5)) + 1,
    "Atanh": np.tanh(_f32(5)),
    "IsNaN": np.array([1.0, np.nan, np.inf], "float32"),
    "IsInf": np.array([1.0, np.nan, np.inf, -np.inf], "float32"),
    "Not": np.array([True, False]),
    "BitwiseNot": np.array([0, 5, -3], "int32"),
}


@pytest.mark.parametrize("op", sorted(_UNARY_INPUTS))
def test_unary(op):
    check([node(op, ["x"])], {"x": _UNARY_INPUTS[op]})


@pytest.mark.parametrize("positive, negative", [(1, 0), (0, 1), (0, 0)])
def test_is_inf_directions(positive, negative):
    x = np.array([1.0, np.nan, np.inf, -np.inf], "float32")
    check([node("IsInf", ["x"], detect_positive=positive, detect_negative=negative)], {"x": x})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op):
    check([node(op, ["a", "b"])], {"a": RNG.random((3, 4)) > 0.5, "b": RNG.random(4) > 0.5})


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise(op):
    check(
        [node(op, ["a", "b"])],
        {"a": RNG.integers(-50, 50, (3, 4)).astype("int16"), "b": np.array([3, 6, 12, -1], "int16")},
    )


@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("opset", [12, 18])
def test_comparisons(op, opset):
    a = RNG.integers(0, 3, (3, 4)).astype("int64")
    check([node(op, ["a", "b"])], {"a": a, "b": np.array([0, 1, 2, 1], "int64")}, opset=opset)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic(op):
    # (The reference's Mean accumulates in place into the first input: give it the full shape.)
    check([node(op, ["a", "b", "c"])], {"a": _f32(3, 4), "b": _f32(4), "c": _f32(3, 1)})
    check([node(op, ["a"])], {"a": _f32(2, 2)})


def test_where_broadcasts():
    check([node("Where", ["c", "x", "y"])], {"c": RNG.random((2, 1, 3)) > 0.5, "x": _f32(4, 3), "y": _f32(1)})


# ---------------------------------------------------------------------- values


@pytest.mark.parametrize(
    "x, to",
    [
        (_f32(3, 4) * 10, TensorProto.INT32),
        (np.array([0.0, -0.5, 2.0, np.nan], "float32"), TensorProto.BOOL),
        (np.array([1, -2, 300], "int64"), TensorProto.FLOAT16),
        (np.array([True, False]), TensorProto.FLOAT),
        (np.array([1.5, -2.5], "float64"), TensorProto.FLOAT),
    ],
)
def test_cast(x, to):
    check([node("Cast", ["x"], to=to)], {"x": x})


def test_cast_like_and_identity():
    check([node("CastLike", ["x", "like"], ["c"]), node("Identity", ["c"])], {"x": _f32(3) * 4, "like": _i64(1)})


def test_cast_to_a_type_relay_lacks_is_unsupported():
    model = _make_model([node("Cast", ["x"], to=TensorProto.BFLOAT16)], {"x": _f32(2)})
    with pytest.raises(UnsupportedOperatorsError, match="BFLOAT16"):
        from_onnx(model)


@pytest.mark.parametrize(
    "attrs",
    [
        {"value": onnx.numpy_helper.from_array(np.arange(6, dtype="int32").reshape(2, 3))},
        {"value_float": 2.5},
        {"value_floats": [1.0, 2.0]},
        {"value_int": 7},
        {"value_ints": [1, 2, 3]},
    ],
)
def test_constant(attrs):
    check([node("Constant", [], ["c"], **attrs), node("Identity", ["c"])], {}, opset=13)


def test_string_constant_is_unsupported():
    model = _make_model([node("Constant", [], ["y"], value_string="hi")], {}, opset=13)
    with pytest.raises(UnsupportedOperatorsError, match="string"):
        from_onnx(model)


def test_constant_of_shape():
    check([node("ConstantOfShape", ["s"])], {}, consts={"s": _i64(2, 3)})
    fill = onnx.numpy_helper.from_array(np.array([5], "int32"))
    check([node("ConstantOfShape", ["s"], value=fill)], {}, consts={"s": np.zeros(0, "int64")})


@pytest.mark.parametrize(
    "start, limit, delta",
    [(_i64(1), _i64(10), _i64(3)), (np.float32(1.5), np.float32(-2.0), np.float32(-0.5)), (_i64(5), _i64(1), _i64(2))],
)
def test_range(start, limit, delta):
    consts = {
        "s": np.asarray(start).reshape(()),
        "l": np.asarray(limit).reshape(()),
        "d": np.asarray(delta).reshape(()),
    }
    check([node("Range", ["s", "l", "d"])], {}, consts=consts)


@pytest.mark.parametrize("k", [0, 1, -2])
def test_eye_like(k):
    check([node("EyeLike", ["x"], k=k, dtype=TensorProto.INT32)], {"x": _f32(3, 4)})


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_with_negative_indices(axis):
    indices = np.array([[0, -1], [2, 5]], "int64")
    check(
        [node("OneHot", ["i", "d", "v"], axis=axis)],
        {"i": indices},
        consts={"d": np.array(3, "int64"), "v": np.array([-1.0, 4.0], "float32")},
    )


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows(op, periodic):
    attrs = {"periodic": periodic, "output_datatype": TensorProto.DOUBLE}
    check([node(op, ["n"], **attrs)], {}, consts={"n": np.array(8, "int64")})


@pytest.mark.parametrize(
    "x, to",
    [
        (_f32(2, 3), TensorProto.INT32),
        (np.array([1, -1], "int8"), TensorProto.UINT8),
        (np.array(True), TensorProto.UINT8),  # 0-d: reinterpret once made it 1-d
    ],
)
def test_bit_cast(x, to):
    check([node("BitCast", ["x"], to=to)], {"x": x}, opset=26)


# ---------------------------------------------------------------------- reductions

_REDUCTIONS = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
]


@pytest.mark.parametrize("op", _REDUCTIONS)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_with_axes_attribute(op, keepdims):
    x = np.abs(_f32(2, 3, 4)) + 0.5
    check([node(op, ["x"], axes=[0, -1], keepdims=keepdims)], {"x": x}, opset=11)
    check([node(op, ["x"], keepdims=keepdims)], {"x": x}, opset=11)


@pytest.mark.parametrize("op", _REDUCTIONS)
def test_reductions_with_axes_input(op):
    x = np.abs(_f32(2, 3, 4)) + 0.5
    opset = 13 if op == "ReduceSum" else 18
    check([node(op, ["x", "axes"], keepdims=0)], {"x": x}, consts={"axes": _i64(1)}, opset=opset)
    check(
        [node(op, ["x", "axes"], noop_with_empty_axes=1)], {"x": x}, consts={"axes": np.zeros(0, "int64")}, opset=opset
    )
    check([node(op, ["x"])], {"x": x}, opset=opset)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSumExp"])
def test_reductions_of_an_empty_set(op):
    check([node(op, ["x", "axes"], keepdims=1)], {}, consts={"x": np.zeros((2, 0, 4), "float32"), "axes": _i64(1)})


def test_log_sum_exp_is_stable_for_large_inputs():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf]], "float32")
    expected = np.array([1000.0 + np.log(2.0), -np.inf], "float32")
    check([node("ReduceLogSumExp", ["x", "axes"], keepdims=0)], {"x": x}, consts={"axes": _i64(1)}, expected=[expected])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reductions(op, last):
    x = np.array([[1, 3, 3], [2, 2, 0]], "float32")
    check([node(op, ["x"], axis=1, keepdims=0, select_last_index=last)], {"x": x}, opset=12)
    check([node(op, ["x"], axis=-2)], {"x": x}, opset=11)


@pytest.mark.parametrize("op, opset", [("CumSum", 14), ("CumProd", 26)])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumulative(op, opset, exclusive, reverse):
    nodes = [node(op, ["x", "axis"], exclusive=exclusive, reverse=reverse)]
    check(nodes, {"x": _f32(3, 4)}, consts={"axis": np.array(-1, "int32")}, opset=opset)


# ---------------------------------------------------------------------- shapes


@pytest.mark.parametrize("start, end", [(0, None), (1, None), (-1, None), (0, -1), (5, None), (2, 1)])
def test_shape_slices(start, end):
    attrs = {"start": start} if end is None else {"start": start, "end": end}
    check([node("Shape", ["x"], **attrs)], {"x": _f32(2, 3, 4)}, opset=15)
    check([node("Size", ["x"])], {"x": _f32(2, 3, 4)})


@pytest.mark.parametrize(
    "shape, allowzero",
    [(_i64(0, -1), 0), (_i64(4, 0, 2), 0), (_i64(-1), 0), (_i64(3, 8), 1), (_i64(2, 1, 12), 1)],
)
def test_reshape(shape, allowzero):
    check([node("Reshape", ["x", "s"], allowzero=allowzero)], {"x": _f32(2, 3, 4)}, consts={"s": shape}, opset=14)


def test_reshape_before_opset_5_takes_an_attribute():
    x = _f32(2, 3, 4)
    check([node("Reshape", ["x"], shape=[6, -1])], {"x": x}, opset=4, expected=[x.reshape(6, 4)])


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1])
def test_flatten(axis):
    check([node("Flatten", ["x"], axis=axis)], {"x": _f32(2, 3, 4)}, opset=13)


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_and_unsqueeze(opset):
    x = _f32(1, 3, 1, 4)
    if opset < 13:
        check(
            [node("Squeeze", ["x"], ["s"], axes=[0, -2]), node("Unsqueeze", ["s"], axes=[-1, 0])], {"x": x}, opset=opset
        )
    else:
        check(
            [node("Squeeze", ["x", "a"], ["s"]), node("Unsqueeze", ["s", "b"])],
            {"x": x},
            consts={"a": _i64(0, -2), "b": _i64(3, 1, 0)},
            opset=opset,
        )
    check([node("Squeeze", ["x"])], {"x": x}, opset=opset)


def test_transpose():
    check([node("Transpose", ["x"], perm=[1, 2, 0])], {"x": _f32(2, 3, 4)})
    check([node("Transpose", ["x"])], {"x": _f32(2, 3, 4)})


@pytest.mark.parametrize("shape", [_i64(3, 4), _i64(2, 1, 1), _i64(1), _i64(2, 3, 4)])
def test_expand_is_bidirectional(shape):
    check([node("Expand", ["x", "s"])], {"x": _f32(3, 1)}, consts={"s": shape})


def test_tile_and_concat():
    check([node("Tile", ["x", "r"])], {"x": _f32(2, 3)}, consts={"r": _i64(2, 3)})
    check([node("Concat", ["a", "b", "c"], axis=-1)], {"a": _f32(2, 1), "b": _f32(2, 3), "c": _f32(2, 0)})


@pytest.mark.parametrize(
    "opset, attrs, split, outputs",
    [
        (11, {"axis": 1}, None, 3),
        (11, {"axis": 1, "split": [1, 4, 1]}, None, 3),
        (13, {"axis": -1}, _i64(2, 0, 4), 3),
        (18, {"axis": 1, "num_outputs": 4}, None, 4),
        (18, {"axis": 1}, _i64(5, 1), 2),
    ],
)
def test_split(opset, attrs, split, outputs):
    names = [f"y{i}" for i in range(outputs)]
    inputs = ["x"] + (["s"] if split is not None else [])
    consts = {"s": split} if split is not None else {}
    check([node("Split", inputs, names, **attrs)], {"x": _f32(2, 6)}, consts=consts, opset=opset)


@pytest.mark.parametrize(
    "starts, ends, axes, steps",
    [
        (_i64(1, 0), _i64(3, 2**62), None, None),
        (_i64(-1), _i64(-(2**62)), _i64(1), _i64(-1)),
        (_i64(0, 3), _i64(-1, 0), _i64(0, -1), _i64(2, -2)),
        (_i64(5), _i64(1), _i64(2), None),
        (_i64(2), _i64(2), _i64(0), None),
    ],
)
def test_slice_with_inputs(starts, ends, axes, steps):
    names = (
        ["x", "s", "e"]
        + (["a"] if axes is not None or steps is not None else [])
        + (["t"] if steps is not None else [])
    )
    consts = {"s": starts, "e": ends}
    if axes is not None or steps is not None:
        consts["a"] = axes if axes is not None else np.arange(len(starts), dtype="int64")
    if steps is not None:
        consts["t"] = steps
    check([node("Slice", names)], {"x": _f32(3, 4, 5)}, consts=consts)


def test_slice_before_opset_10_takes_attributes():
    x = _f32(3, 4, 5)
    check(
        [node("Slice", ["x"], starts=[1, -3], ends=[1000, -1], axes=[0, 2])],
        {"x": x},
        opset=9,
        expected=[x[1:, :, -3:-1]],
    )


@pytest.mark.parametrize("indices", [np.array([[0, -1], [2, -3]], "int64"), np.array(-2, "int32")])
@pytest.mark.parametrize("axis", [0, 1])
def test_gather_with_negative_indices(indices, axis):
    check([node("Gather", ["x", "i"], axis=axis)], {"x": _f32(3, 3)}, consts={"i": indices})
    check([node("Gather", ["x", "i"], axis=axis)], {"x": _f32(3, 3), "i": indices})


def test_gather_elements_with_run_time_negative_indices():
    indices = np.array([[0, -1, 2], [-3, 1, 0]], "int64")
    check([node("GatherElements", ["x", "i"], axis=1)], {"x": _f32(2, 3), "i": indices})


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd(batch_dims):
    indices = np.array([[[0, -1]], [[1, 0]]], "int64") if batch_dims == 0 else np.array([[1], [-1]], "int64")
    check([node("GatherND", ["x", "i"], batch_dims=batch_dims)], {"x": _f32(2, 2, 3), "i": indices})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements(reduction):
    indices = np.array([[1, -1], [0, 2]], "int64")
    feeds = {"x": _f32(2, 3), "i": indices, "u": _f32(2, 2)}
    check([node("ScatterElements", ["x", "i", "u"], axis=1, reduction=reduction)], feeds)


def test_scatter_before_opset_11():
    feeds = {"x": _f32(3, 3), "i": np.array([[1, 0, 2]], "int64"), "u": _f32(1, 3)}
    expected = feeds["x"].copy()
    expected[[1, 0, 2], [0, 1, 2]] = feeds["u"][0]
    check([node("Scatter", ["x", "i", "u"], axis=0)], feeds, opset=10, expected=[expected])


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    feeds = {"x": _f32(4, 3), "i": np.array([[1], [-1]], "int64"), "u": _f32(2, 3)}
    check([node("ScatterND", ["x", "i", "u"], reduction=reduction)], feeds)


# ---------------------------------------------------------------------- padding, rearranging


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [_i64(0, 2, 1, 1), _i64(1, -1, 0, 2), _i64(0, 5, 0, 7)])
def test_pad_modes(mode, pads):
    if mode == "reflect" and pads[1] >= 5:
        pads = _i64(0, 3, 0, 3)
    x = _f32(3, 4)
    expected = None
    if pads.min() < 0:  # numpy's (the reference's) pad refuses negative widths: crop, then pad
        cropped = x[:, -pads[1] :]
        widths = [(pads[0], pads[2]), (0, pads[3])]
        kwargs = {"constant_values": 1.5} if mode == "constant" else {}
        expected = [np.pad(cropped, widths, mode=mode, **kwargs)]
    check(
        [node("Pad", ["x", "p", "v"], mode=mode)],
        {"x": x},
        consts={"p": pads, "v": np.array(1.5, "float32")},
        opset=19,
        expected=expected,
    )


def test_pad_with_axes_and_before_opset_11():
    x = _f32(2, 3, 4)
    check([node("Pad", ["x", "p", "", "a"])], {"x": x}, consts={"p": _i64(1, 2, 3, 0), "a": _i64(-1, 0)}, opset=18)
    expected = np.pad(x, [(0, 0), (1, 2), (0, 0)], constant_values=-1.0)
    check([node("Pad", ["x"], pads=[0, 1, 0, 0, 2, 0], value=-1.0)], {"x": x}, opset=2, expected=[expected])


@pytest.mark.parametrize("shape, axes", [(_i64(3, 7), None), (_i64(6, 2), [-1, 0]), (_i64(5), [1]), (_i64(1, 4), None)])
def test_center_crop_pad(shape, axes):
    attrs = {} if axes is None else {"axes": axes}
    check([node("CenterCropPad", ["x", "s"], **attrs)], {"x": _f32(4, 4)}, consts={"s": shape})


@pytest.mark.parametrize("time_axis, batch_axis", [(0, 1), (1, 0)])
def test_reverse_sequence(time_axis, batch_axis):
    x = _f32(4, 4, 2)
    lengths = np.array([4, 1, 3, 2], "int64")
    check([node("ReverseSequence", ["x", "l"], time_axis=time_axis, batch_axis=batch_axis)], {"x": x, "l": lengths})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 2])
def test_trilu(upper, k):
    inputs, consts = (["x"], {}) if k is None else (["x", "k"], {"k": np.array(k, "int64")})
    check([node("Trilu", inputs, upper=upper)], {"x": _f32(2, 3, 4)}, consts=consts)


@pytest.mark.parametrize(
    "equation, shapes", [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij -> bji", [(2, 3, 4)]), ("ii", [(3, 3)])]
)
def test_einsum(equation, shapes):
    feeds = {f"x{i}": _f32(*s) for i, s in enumerate(shapes)}
    check([node("Einsum", list(feeds), equation=equation)], feeds)


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_compress(axis):
    attrs = {} if axis is None else {"axis": axis}
    condition = np.array([True, False, True])
    check([node("Compress", ["x", "c"], **attrs)], {"x": _f32(3, 3)}, consts={"c": condition})
    check([node("Compress", ["x", "c"], **attrs)], {"x": _f32(3, 3), "c": condition})


def test_non_zero():
    x = np.array([[1, 0, 2], [0, 0, 3]], "int32")
    mod = check([node("NonZero", ["x"])], {}, consts={"x": x})
    assert "argwhere" not in astext(mod)  # folded at import
    check([node("NonZero", ["x"])], {"x": x})


@pytest.mark.parametrize("largest", [0, 1])
def test_top_k(largest):
    x = np.array([[3, 1, 3, 2], [0, 5, 5, 1]], "float32")
    check([node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=largest)], {"x": x}, consts={"k": _i64(3)}, opset=11)
    check(
        [node("TopK", ["x"], ["v", "i"], k=2, axis=0)],
        {"x": x},
        opset=1,
        expected=[np.sort(x, 0)[::-1], np.argsort(-x, 0, kind="stable")],
    )


# ---------------------------------------------------------------------- sequences


def test_split_to_sequence_and_back():
    x = _f32(5, 2)
    nodes = [
        node("SplitToSequence", ["x", "s"], ["seq"], axis=0),
        node("SequenceErase", ["seq", "minus_one"], ["shorter"]),
        node("ConcatFromSequence", ["shorter"], ["y"], axis=0),
        node("SequenceLength", ["seq"], ["n"]),
        node("SequenceAt", ["seq", "minus_one"], ["last"]),
    ]
    check(
        nodes,
        {"x": x},
        consts={"s": np.array(2, "int64"), "minus_one": np.array(-1, "int64")},
        outputs=["y", "n", "last"],
    )


@pytest.mark.parametrize("keepdims", [0, 1])
def test_split_to_sequence_into_single_elements_stacked(keepdims):
    nodes = [
        node("SplitToSequence", ["x"], ["seq"], axis=1, keepdims=keepdims),
        node("ConcatFromSequence", ["seq"], ["y"], axis=-1, new_axis=1 - keepdims),
    ]
    check(nodes, {"x": _f32(2, 3)})


def test_sequence_construct_insert_as_output():
    nodes = [
        node("SequenceEmpty", [], ["empty"]),
        node("SequenceInsert", ["empty", "a"], ["one"]),
        node("SequenceConstruct", ["a", "b"], ["two"]),
        node("SequenceInsert", ["two", "b", "zero"], ["three"]),
    ]
    check(nodes, {"a": _f32(2), "b": _f32(2)}, consts={"zero": np.array(0, "int64")}, outputs=["one", "three"])


def test_sequence_map_applies_the_body_to_each_element():
    body = helper.make_graph(
        [node("Add", ["item", "bias"], ["shifted"]), node("Shape", ["item"], ["shape"])],
        "body",
        [helper.make_value_info(n, onnx.TypeProto()) for n in ("item", "bias")],
        [helper.make_value_info(n, onnx.TypeProto()) for n in ("shifted", "shape")],
    )
    nodes = [
        node("SplitToSequence", ["x", "sizes"], ["seq"]),
        node("SequenceMap", ["seq", "b"], ["shifted", "shapes"], body=body),
        node("ConcatFromSequence", ["shifted"], ["y"], axis=0),
        node("ConcatFromSequence", ["shapes"], ["all_shapes"], axis=0, new_axis=1),
    ]
    x, bias = _f32(5, 2), _f32(2)
    expected = [x + bias, np.array([[2, 2], [3, 2]], "int64")]
    check(nodes, {"x": x, "b": bias}, consts={"sizes": _i64(2, 3)}, outputs=["y", "all_shapes"], expected=expected)


def test_optionals_known_at_import():
    nodes = [
        node("Optional", ["x"], ["full"]),
        node("Optional", [], ["empty"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2])),
        node("OptionalHasElement", ["full"], ["has_full"]),
        node("OptionalHasElement", ["empty"], ["has_empty"]),
        node("OptionalGetElement", ["full"], ["value"]),
    ]
    x = _f32(2)
    expected = [np.array(True), np.array(False), x]
    check(nodes, {"x": x}, outputs=["has_full", "has_empty", "value"], expected=expected)


# ---------------------------------------------------------------------- control flow


def _branch(name, value_name, op, inputs):
    out = helper.make_value_info(value_name, onnx.TypeProto())
    return helper.make_graph([node(op, inputs, [value_name])], name, [], [out])


def test_if_with_a_constant_condition_keeps_only_the_taken_branch():
    then_graph = _branch("then", "t", "Neg", ["x"])
    else_graph = _branch("else", "e", "Abs", ["x"])
    nodes = [node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)]
    mod = check(nodes, {"x": _f32(3)}, consts={"c": np.array(False)})
    text = astext(mod)
    assert "abs" in text and "negative" not in text and "if" not in text


def test_if_with_a_run_time_condition_becomes_a_relay_if():
    then_graph = _branch("then", "t", "Neg", ["x"])
    else_graph = _branch("else", "e", "Abs", ["x"])
    nodes = [node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)]
    for condition in (np.array([True]), np.array([False])):
        mod = check(nodes, {"c": condition, "x": _f32(3)})
    assert "if (" in astext(mod)


def test_if_whose_branches_differ_in_type_is_unsupported():
    then_graph = _branch("then", "t", "Neg", ["x"])
    else_graph = _branch("else", "e", "Shape", ["x"])
    model = _make_model(
        [node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)], {"c": np.array(True), "x": _f32(3)}
    )
    with pytest.raises(UnsupportedOperatorsError, match="If.*different types"):
        from_onnx(model)


def test_loop_with_a_constant_trip_count_is_unrolled():
    body = helper.make_graph(
        [
            node("Add", ["acc", "x"], ["acc_out"]),
            node("Mul", ["acc_out", "acc_out"], ["square"]),
            node("Identity", ["cond"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_value_info("acc", onnx.TypeProto()),
        ],
        [helper.make_value_info(n, onnx.TypeProto()) for n in ("cond_out", "acc_out", "square")],
    )
    nodes = [node("Loop", ["m", "c", "a0"], ["final", "squares"], body=body)]
    check(nodes, {"x": _f32(2), "a0": _f32(2)}, consts={"m": np.array(3, "int64"), "c": np.array(True)})


def test_loop_carrying_a_sequence():
    body = helper.make_graph(
        [
            node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
            node("Mul", ["x", "i_float"], ["scaled"]),
            node("SequenceInsert", ["seq", "scaled"], ["seq_out"]),
            node("Identity", ["cond"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_value_info("seq", onnx.TypeProto()),
        ],
        [helper.make_value_info(n, onnx.TypeProto()) for n in ("cond_out", "seq_out")],
    )
    nodes = [
        node("SequenceEmpty", [], ["empty"]),
        node("Loop", ["m", "", "empty"], ["seq"], body=body),
        node("ConcatFromSequence", ["seq"], ["y"], axis=0, new_axis=1),
    ]
    x = _f32(3)
    expected = [np.stack([x * i for i in range(4)])]
    check(nodes, {"x": x}, consts={"m": np.array(4, "int64")}, expected=expected)


def test_loop_stopping_on_a_run_time_condition_is_unsupported():
    body = helper.make_graph(
        [
            node("Add", ["acc", "x"], ["acc_out"]),
            node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
            node("Less", ["total", "ten"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_value_info("acc", onnx.TypeProto()),
        ],
        [helper.make_value_info(n, onnx.TypeProto()) for n in ("cond_out", "acc_out")],
    )
    model = _make_model(
        [node("Loop", ["", "c", "a0"], ["final"], body=body)],
        {"x": _f32(2), "a0": _f32(2)},
        consts={"c": np.array(True), "ten": np.array(10.0, "float32")},
    )
    with pytest.raises(UnsupportedOperatorsError, match="Loop.*condition"):
        from_onnx(model)


def _scan_body():
    return helper.make_graph(
        [node("Add", ["s", "x"], ["s_out"]), node("Mul", ["s_out", "x"], ["y"])],
        "body",
        [helper.make_value_info(n, onnx.TypeProto()) for n in ("s", "x")],
        [helper.make_value_info(n, onnx.TypeProto()) for n in ("s_out", "y")],
    )


def _scan_reference(s, xs, reverse_in, reverse_out):
    ys = []
    for x in xs[::-1] if reverse_in else xs:
        s = s + x
        ys.append(s * x)
    return s, np.stack(ys[::-1] if reverse_out else ys)


@pytest.mark.parametrize("directions", [(0, 0), (1, 0), (0, 1)])
def test_scan_is_unrolled(directions):
    attrs = {
        "num_scan_inputs": 1,
        "body": _scan_body(),
        "scan_input_directions": [directions[0]],
        "scan_output_directions": [directions[1]],
    }
    s0, xs = _f32(2), _f32(4, 2)
    check(
        [node("Scan", ["s0", "xs"], ["final", "ys"], **attrs)],
        {"s0": s0, "xs": xs},
        opset=16,
        expected=list(_scan_reference(s0, xs, *directions)),
    )
    # Scanning along axis 1, stacking along the last axis.
    final, ys = _scan_reference(s0, xs, *directions)
    attrs.update(scan_input_axes=[1], scan_output_axes=[-1])
    check(
        [node("Scan", ["s0", "xs"], ["final", "ys"], **attrs)],
        {"s0": s0, "xs": xs.T.copy()},
        opset=16,
        expected=[final, ys.T],
    )


def test_scan_8_scans_each_batch_entry():
    s0, xs = _f32(3, 2), _f32(3, 4, 2)
    lengths = np.array([4, 2, 4], "int32")
    attrs = {"num_scan_inputs": 1, "body": _scan_body(), "directions": [1]}
    finals, outputs = [], []
    for n in range(3):
        final, ys = _scan_reference(s0[n], xs[n, : lengths[n]], True, False)
        finals.append(final)
        outputs.append(np.concatenate([ys, np.zeros((4 - lengths[n], 2), "float32")]))
    check(
        [node("Scan", ["lens", "s0", "xs"], ["final", "ys"], **attrs)],
        {"s0": s0, "xs": xs},
        consts={"lens": lengths},
        opset=8,
        expected=[np.stack(finals), np.stack(outputs)],
    )


# ---------------------------------------------------------------------- folding and unknown dimensions


def test_shape_arithmetic_folds_to_a_plain_reshape():
    nodes = [
        node("Shape", ["x"], ["shape"]),
        node("Gather", ["shape", "zero"], ["batch"], axis=0),
        node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
        node("Reshape", ["x", "target"]),
    ]
    consts = {"zero": np.array(0, "int64"), "axes": _i64(0), "minus_one": _i64(-1)}
    mod = check(nodes, {"x": _f32(2, 3, 4)}, consts=consts)
    text = astext(mod)
    assert "reshape(%x, newshape=[2, -1])" in text
    for leftover in ("shape_of", "take", "concatenate", "expand_dims"):
        assert leftover not in text


def test_unknown_dimensions_stay_unknown():
    nodes = [
        node("Shape", ["x"], ["shape"]),
        node("Gather", ["shape", "zero"], ["batch"], axis=0),
        node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["flat"]),
        node("Flatten", ["x"], ["flat2"]),
        node("Slice", ["x", "start", "batch1", "axes"], ["sliced"]),
        node("Expand", ["flat", "target2"], ["wide"]),
        node("Add", ["wide", "flat2"], ["y"]),
    ]
    consts = {
        "zero": np.array(0, "int64"),
        "axes": _i64(0),
        "minus_one": _i64(-1),
        "start": _i64(0),
        "target2": _i64(1, 12),
    }
    model = _make_model(nodes, {"x": _f32(2, 3, 4)}, consts, outputs=["y", "sliced"])
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    mod, _ = from_onnx(model)
    y_type, sliced_type = mod["main"].body.checked_type.fields
    assert [str(d) for d in y_type.shape] == ["?", "12"] and [str(d) for d in sliced_type.shape] == ["?", "3", "4"]
    assert "reshape(%x, newshape=[0, -1])" in astext(mod)
    x = _f32(5, 3, 4)
    y, sliced = transpile.compile(mod, backend="interpreter")(x)
    np.testing.assert_allclose(y, 2 * x.reshape(5, 12), rtol=1e-6)
    np.testing.assert_array_equal(sliced, x)


def test_values_shaped_like_a_tensor_with_unknown_dimensions():
    nodes = [
        node("Shape", ["x"], ["shape"]),
        node("ConstantOfShape", ["shape"], ["ones"], value=onnx.numpy_helper.from_array(np.array([1], "int64"))),
        node("Expand", ["v", "shape"], ["wide"]),
        node("Gather", ["shape", "one"], ["length"], axis=0),
        node("Range", ["zero", "length", "step"], ["steps"]),
        node("Slice", ["shape", "two_vector", "three_vector"], ["last"]),
        node("Mul", ["last", "two_vector"], ["doubled"]),
        node("Concat", ["minus_one", "doubled"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["halves"]),
    ]
    consts = {
        "v": _f32(1, 4),
        "one": np.array(1, "int64"),
        "zero": np.array(0, "int64"),
        "step": np.array(1, "int64"),
        "two_vector": _i64(2),
        "three_vector": _i64(3),
        "minus_one": _i64(-1),
    }
    model = _make_model(nodes, {"x": _f32(2, 6, 4)}, consts, outputs=["ones", "wide", "steps", "halves"])
    for i in (0, 1):
        model.graph.input[0].type.tensor_type.shape.dim[i].dim_param = f"d{i}"
    mod, _ = from_onnx(model)
    types = [[str(d) for d in t.shape] for t in mod["main"].body.checked_type.fields]
    assert types == [["?", "?", "4"], ["?", "?", "4"], ["?"], ["?", "8"]]
    x = _f32(3, 6, 4)
    ones, wide, steps, halves = transpile.compile(mod, backend="interpreter")(x)
    np.testing.assert_array_equal(ones, np.ones((3, 6, 4), "int64"))
    np.testing.assert_array_equal(wide, np.broadcast_to(consts["v"], (3, 6, 4)))
    np.testing.assert_array_equal(steps, np.arange(6))
    np.testing.assert_array_equal(halves, x.reshape(-1, 8))


def test_a_shape_known_only_at_run_time_is_asked_for_as_a_constant():
    model = _make_model([node("Reshape", ["x", "s"])], {"x": _f32(2, 3), "s": _i64(3, 2)})
    with pytest.raises(FrontendError, match="must be a constant at import"):
        from_onnx(model)


# ---------------------------------------------------------------------- compiled backend


@pytest.mark.parametrize(
    "nodes, feeds, consts",
    [
        ([node("Gather", ["x", "i"], axis=1)], {"x": _f32(3, 4), "i": np.array([[0, -1]], "int64")}, {}),
        (
            [node("Slice", ["x", "s", "e", "a", "t"])],
            {"x": _f32(4, 5)},
            {"s": _i64(-1), "e": _i64(-100), "a": _i64(1), "t": _i64(-2)},
        ),
        ([node("ReduceLogSumExp", ["x", "a"], keepdims=0)], {"x": _f32(3, 4)}, {"a": _i64(1)}),
        ([node("Pad", ["x", "p"], mode="reflect")], {"x": _f32(3, 4)}, {"p": _i64(1, 2, 1, 0)}),
        ([node("TopK", ["x", "k"], ["v", "i"])], {"x": _f32(3, 5)}, {"k": _i64(2)}),
        ([node("Mod", ["a", "b"])], {"a": _f32(6) * 4, "b": np.array([1.5, -1.5, 2.0, -2.0, 3.0, 0.7], "float32")}, {}),
    ],
    ids=["gather", "slice", "logsumexp", "pad", "topk", "mod"],
)
def test_on_the_cpp_backend(nodes, feeds, consts):
    check(nodes, feeds, consts=consts, backend="cpp")
