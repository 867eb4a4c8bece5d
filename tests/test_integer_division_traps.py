"""Integer division and remainder never trap on the native backends (issue 12, fuzz seed 6112).

The registry: x / 0 and x % 0 give 0, MIN / -1 wraps to MIN, MIN % -1 is 0 (no SIGFPE). The
TE lowerings guard the divisor, and TVM's simplifier used to fold that guard away inside the
`select(b == 0, 0, ...)` around it once a value bound on b (a mask, a cast from a narrower
unsigned type, a bool) ruled out b = -1; a vectorized select evaluates both of its sides, so the
kernel divided by zero. Every division-like operator, every integer width, run-time zero and -1
divisors (plain, bounded, broadcast, fused, under the program's own `where(b != 0, ...)` guard):
one module per backend, run in a worker process so that a trap fails the test instead of pytest.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from transpile.testing.fuzz.differential import BackendRunner, run_isolated

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

OPERATORS = ["divide", "floor_divide", "trunc_divide", "mod", "floor_mod", "trunc_mod"]
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
BROADCAST_DTYPES = ["int32", "uint8"]


def _values(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every (numerator, divisor) pair of a table with MIN, MAX, 0 and -1 (64 pairs: vectorized)."""
    info = np.iinfo(dtype)
    if info.min < 0:
        table = [info.min, info.min + 1, -7, -1, 0, 1, 7, info.max]
    else:
        table = [0, 1, 2, 3, 7, 8, info.max - 1, info.max]
    values = np.array(table, dtype)
    return np.repeat(values, len(values)), np.tile(values, len(values))


def _module() -> tuple[str, list, list[str]]:
    """(program text, arguments, one label per output). Every form of one width is summed
    (wrapping) into one output: a fused kernel per width keeps the build short (a failure names
    the width; split the sum to find the operator)."""
    params, arguments, outputs, labels = [], [], [], []
    for dtype in DTYPES:
        xs, ys = _values(dtype)
        n = xs.size
        x, y, s = f"%x_{dtype}", f"%y_{dtype}", f"%s_{dtype}"
        params += [f"{x}: Tensor[({n}), {dtype}]", f"{y}: Tensor[({n}), {dtype}]", f"{s}: {dtype}"]
        arguments += [xs, ys, np.array(0, dtype)]
        zeros = f'zeros(shape=[{n}], dtype="{dtype}")'
        divisors = [
            y,  # 0, -1 and MIN at run time
            # value bounds without -1: the fuzzer's crash had bitwise_and(left_shift(bool...), 0)
            f'bitwise_and({y}, full(3, shape=[{n}], dtype="{dtype}"))',
            f'cast(not_equal({y}, {zeros}), dtype="{dtype}")',
            zeros,
            s,  # a scalar broadcast
        ]
        terms = []
        for name in OPERATORS:
            terms += [f"{name}({x}, {divisor})" for divisor in divisors]
            # the program's own guard: a select around the division, evaluated for every lane
            terms.append(f"where(not_equal({y}, {zeros}), {name}({x}, {y}), {x})")
        outputs.append(_wrapping_sum(terms))
        labels.append(f"{dtype}: every operator, x by y, y & 3, cast(y != 0), zeros, scalar 0; where(y != 0, x / y, x)")
        if dtype in BROADCAST_DTYPES:  # 2-d: a column of divisors broadcast along rows
            rows = f"reshape({x}, newshape=[8, {n // 8}])"
            column = f"reshape(strided_slice({y}, begin=[0], end=[8]), newshape=[8, 1])"
            terms = [f"{name}(bitwise_xor({rows}, {rows}), {column})" for name in OPERATORS]
            outputs.append(_wrapping_sum(terms + [f"{name}({rows}, {column})" for name in OPERATORS]))
            labels.append(f"{dtype}: every operator, rows by a column of y")
    text = '#[version = "0.0.5"]\n' + f"def @main({', '.join(params)}) {{\n  ({', '.join(outputs)},)\n}}\n"
    return text, arguments, labels


def _wrapping_sum(terms: list[str]) -> str:
    total = terms[0]
    for term in terms[1:]:
        total = f"add({total}, {term})"
    return total


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_integer_division_by_zero_and_minus_one_never_traps(backend):
    text, arguments, labels = _module()
    reference = BackendRunner("interpreter").run(text, arguments, None)
    assert reference.error is None, reference.describe()
    outcome = run_isolated(backend, text, arguments)
    assert outcome.error is None, outcome.describe()  # a trap kills the worker: "crash"
    assert len(outcome.value) == len(labels)
    wrong = []
    for label, got, want in zip(labels, outcome.value, reference.value):
        if got.dtype != want.dtype or not np.array_equal(got, want):
            wrong.append(f"{label}: {got.tolist()} (interpreter {want.tolist()})")
    assert not wrong, "\n".join(wrong)
