"""Edge values (0, -0, nan, ±inf, huge, INT_MIN, -1, max) through elementwise operators: every backend computes what the interpreter does.

The compiled backends lower each operator through its registry `te_impl`, and TVM's simplifier
treats floats like integers (0 / x -> 0, x - x -> 0, x / 0 aborts the build, Not(a < b) -> b <= a),
so each table runs its operators with the edge values as inputs, as constants on either side and as
fills (`zeros`, `full`) that TVM sees as literals once inlined. Issue 12, items 1, 6 and 7.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("tvm")

import transpile  # noqa: E402
from transpile import relay  # noqa: E402
from transpile.relay.op.families.support import float_to_integer  # noqa: E402

BACKENDS = ["python", "cpp", "tir"]

FLOATS = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 2.5, -2.5, 0.5, 3e38, -3e38, 1e-45, 300.0], "float32")
INTEGERS = {
    "int32": np.array([0, -1, 1, 7, -7, 2**31 - 1, -(2**31)], "int32"),
    "int8": np.array([0, -1, 1, 7, -7, 127, -128], "int8"),
    "uint8": np.array([0, 1, 7, 200, 255], "uint8"),
}
ARITHMETIC = ["add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power", "maximum", "minimum"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
FLOAT_UNARY = ["abs", "sign", "round", "floor", "ceil", "trunc", "sqrt", "rsqrt", "log", "exp", "sigmoid", "tanh", "erf"]
CASTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "bool", "float16", "float64"]

# Outputs the python backend spells inline and gets wrong (reported in /work/prompts/findings.md):
# logical_not of a non-bool tensor returns bool (the type says the input's dtype); a float -> uint32
# cast is numpy's astype, whose nan/inf/out-of-range result depends on the element's position.
PYTHON_PENDING = {"logical_not", "cast uint32"}


def _op(name):
    fn = relay
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn


def _assert_same(label, ref, got, describe):
    ref, got = np.asarray(ref), np.asarray(got)
    assert (got.dtype, got.shape) == (ref.dtype, ref.shape), f"{label}: {got.dtype}{got.shape}, want {ref.dtype}{ref.shape}"
    if ref.dtype.kind == "f":
        both_nan = np.isnan(ref) & np.isnan(got)
        same_zero = (ref == 0) & (got == 0) & (np.signbit(ref) == np.signbit(got))
        equal = (ref == got) & (ref != 0)
        close = (ref != 0) & np.isfinite(ref) & np.isclose(ref, got, rtol=2e-6, atol=0)
        bad = np.flatnonzero(~(both_nan | same_zero | equal | close))
    else:
        bad = np.flatnonzero(ref != got)
    detail = ", ".join(f"{describe(k)} -> {got.flat[k]!r}, want {ref.flat[k]!r}" for k in bad[:5])
    assert not bad.size, f"{label}: {bad.size} wrong: {detail}"


def _check(backend, params, args, outputs, describe):
    """outputs: (label, expr) pairs; those of one dtype and shape are stacked into one tensor, so
    each table is a handful of fused kernels (one build per backend)."""
    if backend == "python":
        outputs = [(label, expr) for label, expr in outputs if label.split("(")[0] not in PYTHON_PENDING]
    module = relay.IRModule.from_expr(relay.Function(params, relay.Tuple([expr for _, expr in outputs])))
    module = relay.transform.InferType()(module)
    groups: dict = {}
    for index, field in enumerate(module["main"].body.fields):
        ty = field.checked_type
        groups.setdefault((ty.dtype, tuple(int(d) for d in ty.shape)), []).append(index)
    order = [i for members in groups.values() for i in members]
    body = relay.Tuple([relay.stack([outputs[i][1] for i in members], axis=0) for members in groups.values()])
    stacked = relay.IRModule.from_expr(relay.Function(params, body))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = transpile.compile(stacked, backend="interpreter")(*args)
        got = transpile.compile(stacked, backend=backend)(*args)
    rows = [(w, g) for wg, gg in zip(want, got) for w, g in zip(np.asarray(wg), np.asarray(gg))]
    for index, (w, g) in zip(order, rows):
        _assert_same(f"{backend} {outputs[index][0]}", w, g, describe)


# ---------------------------------------------------------------- the issue's reproductions


ISSUE_PROGRAMS = [
    # item 1: 0 / x is nan for x = 0 or nan, not 0
    ('def @main(%x: Tensor[(3), float32]) { divide(zeros(shape=[3], dtype="float32"), %x) }', [[0, np.nan, 2]]),
    (
        'def @main(%x: Tensor[(2), float32]) { add(divide(zeros(shape=[2], dtype="float32"), '
        'sum(zeros(shape=[1, 2], dtype="float32"), axis=[0])), %x) }',
        [[1, 2]],
    ),
    # item 6: relu keeps nan
    ("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }", [[np.nan, -1, -0.0, 2]]),
    # item 7: division by a constant zero compiles and gives inf/nan (floats) or 0 (integers)
    ('def @main(%x: Tensor[(3), float32]) { divide(%x, zeros(shape=[3], dtype="float32")) }', [[1, 0, -1]]),
    ('def @main(%x: Tensor[(3), float32]) { floor_mod(%x, zeros(shape=[3], dtype="float32")) }', [[1, 0, -1]]),
    ('def @main(%x: Tensor[(3), float32]) { mod(%x, zeros(shape=[3], dtype="float32")) }', [[1, 0, -1]]),
    ('def @main(%x: Tensor[(3), float32]) { floor_divide(%x, zeros(shape=[3], dtype="float32")) }', [[1, 0, -1]]),
    ('def @main(%x: Tensor[(3), int32]) { divide(%x, zeros(shape=[3], dtype="int32")) }', [[1, 0, -1]]),
    ('def @main(%x: Tensor[(3), int32]) { floor_mod(%x, zeros(shape=[3], dtype="int32")) }', [[1, 0, -1]]),
    ('def @main() -> float32 { divide(1f, 0f) }', []),
]


@pytest.mark.parametrize("backend", ["cpp", "tir"])  # the backends the issue names
@pytest.mark.parametrize("text, args", ISSUE_PROGRAMS, ids=range(len(ISSUE_PROGRAMS)))
def test_issue_reproductions(backend, text, args):
    module = relay.parse(text)
    dtype = "int32" if "int32" in text else "float32"
    arrays = [np.array(a, dtype) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = transpile.compile(module, backend="interpreter")(*arrays)
        got = transpile.compile(module, backend=backend)(*arrays)
    _assert_same(text, want, got, lambda k: f"element {k}")


def test_reference_semantics():
    """The registry's own answers for the cases the issue names (what every backend must give)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run = transpile.compile(
            relay.parse(
                "def @main(%x: Tensor[(4), float32], %i: Tensor[(2), int32]) {"
                ' (divide(zeros(shape=[4], dtype="float32"), %x), nn.relu(%x), divide(%i, zeros(shape=[2], dtype="int32")),'
                " clip(%x, a_min=0f, a_max=1f), floor_mod(%x, -2.5f)) }"
            ),
            backend="interpreter",
        )
        quotient, relu, integer_quotient, clipped, remainder = run(
            np.array([0, np.nan, 2, -0.0], "float32"), np.array([7, -7], "int32")
        )
    np.testing.assert_array_equal(quotient, [np.nan, np.nan, 0, np.nan])
    np.testing.assert_array_equal(relu, [0, np.nan, 2, 0])
    assert not np.signbit(relu[3]) and not np.signbit(clipped[3])  # np.maximum(-0, 0) is +0
    np.testing.assert_array_equal(integer_quotient, [0, 0])
    np.testing.assert_array_equal(remainder, [0, np.nan, -0.5, 0])
    assert np.signbit(remainder[0]) and np.signbit(remainder[3])  # a zero remainder takes the divisor's sign


def test_float_to_integer_is_defined_for_every_value():
    values = np.array([np.nan, np.inf, -np.inf, 3e38, -3e38, 1000.0, -1.0, 2.9, -2.9, 5e9], "float32")
    assert float_to_integer(values, "int8").tolist() == [0, 0, 0, 0, 0, -24, -1, 2, -2, 0]
    assert float_to_integer(values, "int32").tolist() == [-(2**31)] * 5 + [1000, -1, 2, -2, -(2**31)]
    assert float_to_integer(values, "uint32").tolist() == [0] * 5 + [1000, 2**32 - 1, 2, 2**32 - 2, 705032704]
    assert float_to_integer(values, "int64").tolist()[:5] == [-(2**63)] * 5
    assert float_to_integer(np.array([1e19, np.nan, -1.0]), "uint64").tolist() == [10**19, 2**63, 2**64 - 1]
    # position in the array does not matter (numpy's own astype differs between its SIMD loop and tail)
    many = np.full(17, np.nan, "float32")
    assert set(float_to_integer(many, "uint32").tolist()) == {0}


# ---------------------------------------------------------------- tables


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_binary_table(backend):
    n = len(FLOATS)
    xs, ys = np.repeat(FLOATS, n), np.tile(FLOATS, n)
    x, y = relay.var("x", shape=(n * n,)), relay.var("y", shape=(n * n,))
    outputs = [(name, _op(name)(x, y)) for name in ARITHMETIC + COMPARISONS]
    outputs += [
        ("(x + y) - y", relay.subtract(relay.add(x, y), y)),
        ("logical_not(x < y)", relay.logical_not(relay.less(x, y))),
        ("logical_not(x == y)", relay.logical_not(relay.equal(x, y))),
        ("logical_xor(x < y, x >= y)", relay.logical_xor(relay.less(x, y), relay.greater_equal(x, y))),
        ("maximum(x, y) - y", relay.subtract(relay.maximum(x, y), y)),
    ]
    _check(backend, [x, y], [xs, ys], outputs, lambda k: f"({xs[k]!r}, {ys[k]!r})")


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_operand_and_literal_zero(backend):
    """TVM folds these algebraically (x - x, x == x, 0 * x, 0 / x, x / 0); IEEE does not."""
    n = len(FLOATS)
    x = relay.var("x", shape=(n,))
    zeros = relay.zeros((n,), "float32")
    outputs = [(f"{name}(x, x)", _op(name)(x, x)) for name in ARITHMETIC + COMPARISONS]
    for name in ARITHMETIC:
        outputs.append((f"{name}(x, zeros)", _op(name)(x, zeros)))
        outputs.append((f"{name}(zeros, x)", _op(name)(zeros, x)))
    _check(backend, [x], [FLOATS], outputs, lambda k: repr(FLOATS[k]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_scalar_constants_on_either_side(backend):
    n = len(FLOATS)
    x = relay.var("x", shape=(n,))
    outputs = []
    for value in (0.0, -0.0, np.nan, np.inf):
        constant = relay.const(np.float32(value))
        for name in ("add", "subtract", "multiply", "divide", "floor_mod", "maximum"):
            outputs.append((f"{name}(x, {value})", _op(name)(x, constant)))
            outputs.append((f"{name}({value}, x)", _op(name)(constant, x)))
    _check(backend, [x], [FLOATS], outputs, lambda k: repr(FLOATS[k]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_fills_on_both_sides(backend):
    """Both operands are fills, invisible to FoldConstant and literals to TVM once inlined."""
    values = [0.0, -0.0, np.nan, np.inf, 1.0]
    x = relay.var("x", shape=(1,))
    outputs = []
    for a in values:
        for b in values:
            fill_a = relay.full(relay.const(np.float32(a)), (1,), "float32")
            fill_b = relay.full(relay.const(np.float32(b)), (1,), "float32")
            for name in ("divide", "floor_mod", "mod", "subtract", "multiply"):
                outputs.append((f"{name}({a}, {b})", relay.add(_op(name)(fill_a, fill_b), relay.zeros_like(x))))
    _check(backend, [x], [np.array([-0.0], "float32")], outputs, lambda k: "")


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_unary_and_cast_table(backend):
    n = len(FLOATS)
    x = relay.var("x", shape=(n,))
    outputs = [(name, _op(name)(x)) for name in FLOAT_UNARY + ["negative", "nn.relu", "isnan", "isinf", "isfinite", "logical_not"]]
    outputs += [(f"cast {dtype}", relay.cast(x, dtype)) for dtype in CASTS]
    outputs += [("clip(x, 0, 1)", relay.clip(x, 0.0, 1.0)), ("clip(x, -1, 0)", relay.clip(x, -1.0, 0.0))]
    _check(backend, [x], [FLOATS], outputs, lambda k: repr(FLOATS[k]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", sorted(INTEGERS))
def test_integer_tables(backend, dtype):
    values = INTEGERS[dtype]
    n = len(values)
    xs, ys = np.repeat(values, n), np.tile(values, n)
    x, y = relay.var("x", shape=(n * n,), dtype=dtype), relay.var("y", shape=(n * n,), dtype=dtype)
    zeros = relay.zeros((n * n,), dtype)
    outputs = [(name, _op(name)(x, y)) for name in ARITHMETIC + COMPARISONS if name != "power"]
    outputs += [(f"{name}(x, zeros)", _op(name)(x, zeros)) for name in ("divide", "floor_divide", "mod", "floor_mod")]
    outputs += [(name, _op(name)(x)) for name in ("abs", "sign", "negative", "nn.relu", "logical_not")]
    outputs += [(f"cast {to}", relay.cast(x, to)) for to in ("int8", "uint8", "int32", "bool", "float32")]
    _check(backend, [x, y], [xs, ys], outputs, lambda k: f"({xs[k]!r}, {ys[k]!r})")


# ---------------------------------------------------------------- shifts and a signed minimum as literals

SHIFT_AMOUNTS = [-3, -1, 0, 1, 7, 8, 31, 32, 63, 64, 100]
SHIFT_VALUES = {
    "int8": [1, 100, 127, -1, -5, -128],
    "int32": [1, 100, 2**31 - 1, -1, -5, -(2**31)],
    "int64": [1, 100, 2**63 - 1, -1, -(2**63)],
    "uint8": [1, 100, 255],
    "uint64": [1, 2**64 - 1],
}
SIGNED_MINIMUM_OPS = ["multiply", "floor_divide", "floor_mod", "divide", "mod", "subtract", "maximum"]


def _shift_amounts(dtype):
    info = np.iinfo(dtype)
    return [a for a in SHIFT_AMOUNTS if info.min <= a <= info.max]


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_shifts_by_any_amount_and_signed_minimum_literals(backend):
    """Issue 12 (fuzzer): TVM's constant folder aborted the build on `1 >> -2` ("Shift amount must
    be non-negative") and on `x * INT_MIN`, `x // INT_MIN` ("Literal value 2147483648 exceeds
    range of int32"). Amounts and values come as run-time inputs and as fills (literals to TVM)."""
    params, args, outputs = [], [], []
    for dtype, values in SHIFT_VALUES.items():
        amounts = _shift_amounts(dtype)
        xs = np.repeat(np.array(values, dtype), len(amounts))
        ys = np.tile(np.array(amounts, dtype), len(values))
        x = relay.var(f"x_{dtype}", shape=xs.shape, dtype=dtype)
        y = relay.var(f"y_{dtype}", shape=ys.shape, dtype=dtype)
        params += [x, y]
        args += [xs, ys]

        def fill(value, dtype=dtype, n=xs.size):
            return relay.full(relay.const(np.array(value, dtype)), (n,), dtype)

        for name in ("left_shift", "right_shift"):
            outputs.append((f"{name} {dtype}", _op(name)(x, y)))
            outputs += [(f"{name}(x, {a}) {dtype}", _op(name)(x, fill(a))) for a in amounts]
            outputs += [(f"{name}({v}, y) {dtype}", _op(name)(fill(v), y)) for v in values]
        if dtype.startswith("int"):
            minimum = int(np.iinfo(dtype).min)
            for name in SIGNED_MINIMUM_OPS:
                outputs.append((f"{name}(x, MIN) {dtype}", _op(name)(x, fill(minimum))))
                outputs.append((f"{name}(MIN, x) {dtype}", _op(name)(fill(minimum), x)))
            outputs.append((f"prod(MIN) {dtype}", relay.add(relay.prod(fill(minimum, n=1)), relay.zeros_like(x))))
    _check(backend, params, args, outputs, lambda k: f"element {k}")


FUZZER_PROGRAMS = [
    # a constant shift amount out of range: 1 >> -2 is 0 (numpy), and must compile
    'def @main() -> Tensor[(1), int32] { right_shift(ones(shape=[1], dtype="int32"), '
    'full(-2, shape=[1], dtype="int32")) }',
    # INT_MIN as a literal: 1 * INT_MIN, folded by TVM's rewriter into an out-of-range literal
    'def @main() -> int32 { prod(full(-2147483648, shape=[1], dtype="int32")) }',
]


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_fuzzer_shift_and_minimum_reproductions(backend):
    """The fuzzer's two programs, shrunk, in one module (one build per backend)."""
    bodies = [text.split("{", 1)[1].rsplit("}", 1)[0].strip() for text in FUZZER_PROGRAMS]
    module = relay.parse("def @main() { (" + ", ".join(bodies) + ",) }")
    want = transpile.compile(module, backend="interpreter")()
    got = transpile.compile(module, backend=backend)()
    for text, w, g in zip(FUZZER_PROGRAMS, want, got):
        _assert_same(text, w, g, lambda k: f"element {k}")
