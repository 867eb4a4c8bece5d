"""Constant operands that TVM and LLVM see once a kernel is inlined: zero divisors, INT_MIN, unsigned
zeros and constant reductions compile on the native backends and give what the interpreter gives.

A fill (`zeros`, `full`, `zeros_like`, a `cast` of one) is a literal inside its consumer's kernel.
TVM's simplifier folds float and unsigned literals as if they were mathematical integers (`x / 0`
and `0u - 8` abort the build, `0u - x` becomes 0) and TVM marks 32/64-bit integer arithmetic as not
overflowing for LLVM, which then folds a constant loop (a sum of INT_MIN) to anything. Each sweep
builds one program whose outputs are grouped per dtype into a few `concatenate` kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tvm")

import transpile  # noqa: E402
from transpile import relay  # noqa: E402

NATIVE = ["cpp", "tir"]
N = 4
INT_MIN = {"int32": -(2**31), "int64": -(2**63)}

INPUTS = {
    "float32": np.array([1.0, -0.0, np.inf, np.nan], "float32"),
    "int32": np.array([7, -7, 0, -(2**31)], "int32"),
    "int64": np.array([7, -7, 0, -(2**63)], "int64"),
    "uint8": np.array([0, 1, 8, 255], "uint8"),
    "uint32": np.array([0, 1, 8, 2**32 - 1], "uint32"),
    "uint64": np.array([0, 1, 8, 2**64 - 1], "uint64"),
}


def _zeros(dtype):
    """Spellings of a constant zero of `dtype`: the first two meet every operator, the others
    (casts of fills of other dtypes, full_like) the main ones."""
    shape = f"shape=[{N}]"
    return [
        f'zeros({shape}, dtype="{dtype}")',
        f'cast(zeros_like(%int32), dtype="{dtype}")',
        f'full(0, {shape}, dtype="{dtype}")',
        f"zeros_like(%{dtype})",
        f'cast(zeros({shape}, dtype="bool"), dtype="{dtype}")',
        (
            f'cast(full(0.0f, {shape}, dtype="float32"), dtype="{dtype}")'
            if dtype != "float32"
            else f"full_like(%{dtype}, 0f)"
        ),
    ]


def _fill(value, dtype):
    return f'full({value}, shape=[{N}], dtype="{dtype}")'


def _zero_operand_outputs():
    """(dtype, expression) pairs: zero spellings as divisors, minuends and compared sides."""
    outputs = []
    for dtype in INPUTS:
        x, eight = f"%{dtype}", _fill(8, dtype)
        for k, zero in enumerate(_zeros(dtype)):
            outputs += [
                (dtype, f"divide({x}, {zero})"),
                (dtype, f"subtract({zero}, {x})"),
                ("bool", f"less({zero}, {x})"),
            ]
            if k >= 2:
                continue
            outputs += [(dtype, f"{op}({x}, {zero})") for op in ("floor_divide", "floor_mod", "mod")]
            outputs += [(dtype, f"subtract({zero}, {eight})"), ("bool", f"greater({eight}, {zero})")]
            if dtype == "float32":
                outputs += [(dtype, f"divide({zero}, {x})"), (dtype, f"multiply({zero}, {x})")]
            if dtype.startswith("uint"):
                outputs += [(dtype, f"where(less({zero}, {eight}), {zero}, {x})"), (dtype, f"negative({zero})")]
        if dtype.startswith("uint"):
            outputs.append((dtype, f"negative({x})"))
    return outputs


def _int_minimum_outputs():
    """A signed minimum (a fill, or INT32_MIN cast to int64 / a full_like) on either side of the
    operators that negate or divide it."""
    outputs = []
    divisions = ("divide", "floor_divide", "floor_mod", "mod")
    for dtype, minimum in INT_MIN.items():
        x, minus_one = f"%{dtype}", _fill(-1, dtype)
        other = f'cast({_fill(-(2**31), "int32")}, dtype="int64")' if dtype == "int64" else f"full_like({x}, {minimum})"
        for least in (_fill(minimum, dtype), other):
            outputs += [(dtype, f"{op}({least}, {minus_one})") for op in divisions]
            outputs += [(dtype, f"{op}({x}, {least})") for op in divisions]
            outputs += [(dtype, f"subtract({least}, ones_like({x}))"), (dtype, f"subtract(zeros_like({x}), {least})")]
            outputs += [(dtype, f"{op}({least})") for op in ("negative", "abs")]
            outputs += [(dtype, f"multiply({least}, {minus_one})")]
            outputs += [("bool", f"less({least}, {x})"), ("bool", f"greater({least}, {minus_one})")]
    return outputs


def _reduction_outputs():
    """Reductions over constants whose result wraps (each a [4] result, reduced over a second axis)."""
    outputs = []
    for dtype, minimum in INT_MIN.items():
        for k in (2, 3, 4, 8):
            outputs.append((dtype, f'sum(full({minimum}, shape=[{N}, {k}], dtype="{dtype}"), axis=[1])'))
        outputs.append((dtype, f'mean(full({minimum}, shape=[{N}, 4], dtype="{dtype}"), axis=[1])'))
        outputs.append((dtype, f'prod(full(65536, shape=[{N}, 4], dtype="{dtype}"), axis=[1])'))
        outputs.append((dtype, f'prod(full(3, shape=[{N}, 41], dtype="{dtype}"), axis=[1])'))
        outputs.append(
            (dtype, f'sum(cast(full({minimum}, shape=[{N}, 4, 2], dtype="{dtype}"), dtype="{dtype}"), axis=[1, 2])')
        )
        outputs.append(
            (dtype, f'sum(broadcast_to(full({minimum}, shape=[1], dtype="{dtype}"), shape=[{N}, 6]), axis=[1])')
        )
        outputs.append((dtype, f'sum(full({minimum}, shape=[2, {N}], dtype="{dtype}"), axis=[0])'))
    outputs.append(("uint32", f'sum(full(2147483648, shape=[{N}, 2], dtype="uint32"), axis=[1])'))
    outputs.append(("uint8", f'sum(full(128, shape=[{N}, 2], dtype="uint8"), axis=[1])'))
    outputs.append(("int32", f'sum(cast(full(2147483648i64, shape=[{N}, 2], dtype="int64"), dtype="int32"), axis=[1])'))
    return outputs


def _program(outputs):
    """One Relay program: the outputs of each dtype concatenated into one result; (text, labels)."""
    by_dtype: dict[str, list[str]] = {}
    for dtype, expr in outputs:
        by_dtype.setdefault(dtype, []).append(expr)
    params = ", ".join(f"%{d}: Tensor[({N}), {d}]" for d in INPUTS)
    fields = [f"concatenate(({', '.join(exprs)},), axis=0)" for exprs in by_dtype.values()]
    text = f'#[version = "0.0.5"]\ndef @main({params}) {{\n  ({", ".join(fields)},)\n}}\n'
    return text, list(by_dtype.values())


def _agree(ref, got) -> np.ndarray:
    """Elementwise: the same value (nan matches nan, zeros match by sign)."""
    if ref.dtype.kind != "f":
        return ref == got
    same = (ref == got) & (np.signbit(ref) == np.signbit(got))
    return same | (np.isnan(ref) & np.isnan(got))


def _check_sweep(outputs, backend):
    text, labels = _program(outputs)
    module = relay.parse(text)
    args = list(INPUTS.values())
    want = transpile.compile(module, backend="interpreter")(*args)
    got = transpile.compile(module, backend=backend)(*args)
    wrong = []
    for exprs, ref, value in zip(labels, want, got):
        ref, value = np.asarray(ref), np.asarray(value)
        assert (value.dtype, value.shape) == (ref.dtype, ref.shape)
        ok = _agree(ref, value).reshape(len(exprs), N)
        for k, expr in enumerate(exprs):
            if not ok[k].all():
                wrong.append(f"{expr}: {value.reshape(-1, N)[k].tolist()}, want {ref.reshape(-1, N)[k].tolist()}")
    assert not wrong, f"{len(wrong)} wrong on {backend}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("backend", NATIVE)
def test_constant_zero_operands(backend):
    _check_sweep(_zero_operand_outputs(), backend)


@pytest.mark.parametrize("backend", NATIVE)
def test_constant_int_minimum_operands(backend):
    _check_sweep(_int_minimum_outputs(), backend)


@pytest.mark.parametrize("backend", NATIVE)
def test_reductions_of_constants_wrap(backend):
    _check_sweep(_reduction_outputs(), backend)
