"""Divisors TVM's simplifier folds to 0 by itself build and follow the registry (issue 12, fuzz seeds 101445, 101736).

TVM aborts a build on a division or remainder by a literal 0 ("Divide by zero", int and float),
and its simplifier makes such literals of values the program computes: x && False, x * 0 and
x - x for integers, x & 0, min(x, 0) of an unsigned x, where(False, x, 0), casts of those, and
an inner `mod(x, 0)` (its guard folded inside the outer operator's). The lowerings hand every
divisor to TIR in a form it cannot fold (elemwise._opaque_operand); the results are numpy's:
x / 0 is ±inf or nan for floats, 0 for integers. Every division-like operator × every such
divisor × int32, int64, uint8, float32, float64: one module per backend, in a worker process (a
trap fails the test), checked against the interpreter. (Without the opaque divisor 17 of the 65
divisors abort the build: the bool ones and where(False, x, 0) as float divisors, inner x // 0
and x % 0; the others are kept from folding today by other lowerings: integer arithmetic that
wraps in a wider type, bit operations TVM leaves alone.)
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from transpile.testing.fuzz.differential import BackendRunner, run_isolated

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

OPERATORS = ["divide", "floor_divide", "trunc_divide", "mod", "trunc_mod", "floor_mod"]
DTYPES = ["int32", "int64", "uint8", "float32", "float64"]
N = 8  # one vector's worth: the kernels are vectorized, so a folded lane cannot hide in a scalar tail


def _dividends(dtype: str) -> np.ndarray:
    if dtype.startswith("float"):
        return np.array([-np.inf, -3.5, -0.0, 0.0, 1.0, 2.5, np.inf, np.nan], dtype)
    info = np.iinfo(dtype)
    if info.min < 0:
        return np.array([info.min, -7, -1, 0, 1, 7, info.max, 5], dtype)
    return np.array([0, 1, 2, 3, 7, 8, info.max - 1, info.max], dtype)


def _zeros(dtype: str) -> str:
    return f'zeros(shape=[{N}], dtype="{dtype}")'


def _divisors(dtype: str) -> dict[str, str]:
    """{label: divisor expression of `dtype`}, each 0 everywhere, each a form TVM's simplifier can fold to 0.

    %p is a bool, %i an int32, %u a uint8 input, %y one of `dtype` (its values do not matter)."""

    def of(expression: str, source: str) -> str:
        return expression if source == dtype else f'cast({expression}, dtype="{dtype}")'

    integer = "int32" if dtype.startswith("float") else dtype
    own = "%i" if integer == "int32" else "%y"  # an integer input of `integer`
    zero, one = _zeros(integer), f'full(1, shape=[{N}], dtype="{integer}")'
    eight = f'full(8, shape=[{N}], dtype="uint8")'
    return {
        "p && False": of(f"logical_and(%p, {_zeros('bool')})", "bool"),
        "False && False": of(f'logical_and({_zeros("bool")}, full(False, shape=[{N}], dtype="bool"))', "bool"),
        "p * False": of(f"multiply(%p, {_zeros('bool')})", "bool"),
        "x != x": of(f"not_equal({own}, {own})", "bool"),
        "x * 0": of(f"multiply({own}, {zero})", integer),
        "x - x": of(f"subtract({own}, {own})", integer),
        "x & 0": of(f"bitwise_and({own}, {zero})", integer),
        "min(u, 0)": of(f"minimum(%u, {_zeros('uint8')})", "uint8"),
        "u >> 8": of(f"right_shift(%u, {eight})", "uint8"),
        "where(False, x, 0)": of(f"where({_zeros('bool')}, {own}, {zero})", integer),
        "x // 0": of(f"floor_divide({own}, {zero})", integer),
        "x % 0": of(f"mod({own}, {zero})", integer),
        "x % 1": of(f"floor_mod({own}, {one})", integer),
        "int(p) < 0": of(f'less(cast(%p, dtype="{integer}"), {zero})', "bool"),  # a range TVM knows
    }


# A float 0 TVM derived itself as the *other* operand: it folded 0 * x and 0 / x to 0, where IEEE
# gives nan for x = inf, 0 or nan (fuzz seed 111069: 0 from less(cast(bool), 0), divided by 0).
ZERO_OPERAND_FORMS = ["multiply({z}, {x})", "multiply({x}, {z})", "divide({z}, {x})", "floor_divide({z}, {x})", "trunc_divide({z}, {x})"]  # fmt: skip


def _module(zero_operands: bool = False) -> tuple[str, list, list[str]]:
    """(program text, arguments, one label per output): per dtype and divisor, the operators'
    results stacked into one output (one fused kernel each keeps the build short). With
    `zero_operands`, the float zeros are the dividend or a factor instead, by ZERO_OPERAND_FORMS."""
    params = [f"%p: Tensor[({N}), bool]", f"%i: Tensor[({N}), int32]", f"%u: Tensor[({N}), uint8]"]
    arguments = [np.array([0, 1] * (N // 2), bool), np.arange(-3, N - 3, dtype="int32"), np.arange(N, dtype="uint8")]
    outputs, labels = [], []
    for dtype in [d for d in DTYPES if d.startswith("float")] if zero_operands else DTYPES:
        x, y = f"%x_{dtype}", f"%y_{dtype}"
        params += [f"{x}: Tensor[({N}), {dtype}]", f"{y}: Tensor[({N}), {dtype}]"]
        arguments += [_dividends(dtype), _dividends(dtype)[::-1].copy()]
        for label, divisor in _divisors(dtype).items():
            divisor = divisor.replace("%y", y)
            if zero_operands:
                results = ", ".join(form.format(z=divisor, x=x) for form in ZERO_OPERAND_FORMS)
                labels.append(f"{dtype}: {label} as 0 in {', '.join(ZERO_OPERAND_FORMS)}")
            else:
                results = ", ".join(f"{name}({x}, {divisor})" for name in OPERATORS)
                labels.append(f"{dtype} by {label} ({', '.join(OPERATORS)})")
            outputs.append(f"stack(({results}), axis=0)")
    text = '#[version = "0.0.5"]\n' + f"def @main({', '.join(params)}) {{\n  ({', '.join(outputs)},)\n}}\n"
    return text, arguments, labels


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind != "f":
        return np.array_equal(got, want)
    # nan where numpy has nan, and the same sign for zeros and infinities
    signs_agree = np.array_equal(np.signbit(got) | np.isnan(got), np.signbit(want) | np.isnan(want))
    return np.array_equal(got, want, equal_nan=True) and signs_agree


@pytest.mark.parametrize("zero_operands", [False, True], ids=["divisors", "dividends_and_factors"])
@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_divisors_folded_to_zero_by_tvm_build_and_follow_the_registry(backend, zero_operands):
    text, arguments, labels = _module(zero_operands)
    reference = BackendRunner("interpreter").run(text, arguments, None)
    assert reference.error is None, reference.describe()
    outcome = run_isolated(backend, text, arguments)
    assert outcome.error is None, outcome.describe()  # "Divide by zero" at compile, or a trap: "crash"
    assert len(outcome.value) == len(labels)
    wrong = [
        f"{label}: {got.tolist()} (interpreter {want.tolist()})"
        for label, got, want in zip(labels, outcome.value, reference.value)
        if not _same(got, want)
    ]
    assert not wrong, "\n".join(wrong)
    if zero_operands:  # 0 * inf, 0 / 0, 0 / nan are nan
        assert all(np.isnan(want).any() for want in reference.value)
    else:  # the float results are x / 0, not 0
        assert any(np.isinf(want).any() for want in reference.value)
