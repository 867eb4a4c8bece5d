"""Integer arithmetic wraps modulo 2**bits on the native backends exactly as numpy (the registry) does.

TVM's simplifier treats integers as mathematical integers (`a + b > a` became `b > 0`, a cast of
a sum was pushed into its terms) and its LLVM codegen marks 32/64-bit add/sub/mul as not
overflowing (nsw/nuw), so an overflowing value compared, clamped or selected came out wrong
(families/te_wrapping.py). Here: add, subtract, multiply, negative, abs and the wrapping
reductions and scans of every integer width, on pairs of edge values (MIN, MAX, -1, 0, 1, MAX/2,
...), each in the contexts that used to fold (compare with an operand and with 0, minimum, where,
a widening cast). One module per backend; every width's results are stacked into one int64 output
per kind, row by row named in a failure.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from transpile.testing.fuzz.differential import BackendRunner

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _values(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) pair of a table of edge values: sums, differences and products that wrap."""
    info = np.iinfo(dtype)
    half = int(info.max) // 2
    if info.min < 0:
        table = [info.min, info.min + 1, -2, -1, 0, 1, 2, half + 1, info.max]
    else:
        table = [0, 1, 2, half, half + 1, info.max - 1, info.max]
    values = np.array(table, dtype)
    return np.repeat(values, len(values)), np.tile(values, len(values))


def _elementwise(a: str, b: str) -> dict[str, str]:
    return {
        "add": f"add({a}, {b})",
        "subtract": f"subtract({a}, {b})",
        "multiply": f"multiply({a}, {b})",
        "negative": f"negative({a})",
        "abs": f"abs({a})",
    }


def _contexts(result: str, a: str, b: str) -> dict[str, str]:
    """Where a wrapped value used to be folded as a mathematical integer (each an int64 row)."""
    zeros = f"zeros_like({a})"
    return {
        "value": result,
        "greater than a": f"greater({result}, {a})",
        "less than b": f"less({result}, {b})",
        "less than 0": f"less({result}, {zeros})",
        "minimum with a": f"minimum({result}, {a})",
        "where(result < a, b, result)": f"where(less({result}, {a}), {b}, {result})",
    }


def _reductions(pair: str, a: str) -> dict[str, str]:
    """Reductions over the pair (a, b) of each row; each context spells its reduction differently
    (a distinct call: common subexpression elimination would share one, unfused)."""
    return {
        "sum": f"sum({pair}, axis=[1])",
        "sum, greater than a": f"greater(sum({pair}, axis=[-1]), {a})",
        "prod": f"prod({pair}, axis=[1])",
        "mean": f"mean({pair}, axis=[1])",
        "cumsum": f"take(cumsum({pair}, axis=1), 1, axis=1)",
        "cumsum, greater than a": f"greater(take(cumsum({pair}, axis=-1), 1, axis=1), {a})",
        "cumprod": f"take(cumprod({pair}, axis=1), 1, axis=1)",
    }


def _rows(named: dict[str, str]) -> tuple[str, list[str]]:
    stacked = ", ".join(f'cast({expr}, dtype="int64")' for expr in named.values())
    return f"stack(({stacked},), axis=0)", list(named)


def _module() -> tuple[str, list, list[tuple[str, list[str]]]]:
    """(program text, arguments, per output: (its name, its row labels))."""
    params, arguments, outputs, layout = [], [], [], []
    for dtype in DTYPES:
        a_values, b_values = _values(dtype)
        a, b = f"%a_{dtype}", f"%b_{dtype}"
        params += [f"{a}: Tensor[({a_values.size}), {dtype}]", f"{b}: Tensor[({a_values.size}), {dtype}]"]
        arguments += [a_values, b_values]
        named = {}
        for op, result in _elementwise(a, b).items():
            for context, expr in _contexts(result, a, b).items():
                named[f"{op}: {context}"] = expr
        text, labels = _rows(named)
        outputs.append(text)
        layout.append((f"{dtype} elementwise", labels))
        pair = f"stack(({a}, {b}), axis=1)"
        text, labels = _rows(_reductions(pair, a))
        outputs.append(text)
        layout.append((f"{dtype} reductions", labels))
    text = '#[version = "0.0.5"]\n' + f"def @main({', '.join(params)}) {{\n  ({', '.join(outputs)},)\n}}\n"
    return text, arguments, layout


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_integer_arithmetic_wraps_like_numpy(backend):
    text, arguments, layout = _module()
    reference = BackendRunner("interpreter").run(text, arguments, None)
    assert reference.error is None, reference.describe()
    outcome = BackendRunner(backend).run(text, arguments, None)
    assert outcome.error is None, outcome.describe()
    assert len(outcome.value) == len(layout)
    wrong = []
    for (name, labels), got, want in zip(layout, outcome.value, reference.value):
        assert got.shape == want.shape == (len(labels), want.shape[1]), name
        for label, got_row, want_row in zip(labels, got, want):
            if not np.array_equal(got_row, want_row):
                at = np.flatnonzero(got_row != want_row)[:4]
                got_values, want_values = got_row[at].tolist(), want_row[at].tolist()
                wrong.append(f"{name}, {label}: rows {at.tolist()} give {got_values}, numpy {want_values}")
    assert not wrong, "\n".join(wrong)


def test_edge_values_reach_every_wrap():
    """The table makes each operation overflow somewhere (else the test could not fail)."""
    for dtype in DTYPES:
        a, b = (v.astype(object) for v in _values(dtype))
        info = np.iinfo(dtype)

        def wraps(values):
            return any(not info.min <= int(v) <= info.max for v in values)

        assert wraps(a + b) and wraps(a - b) and wraps(a * b), dtype
        if info.min < 0:
            assert wraps(-a) and wraps(abs(a)), dtype
