"""Division and remainder operators reject bool operands with a located type error.

numpy promotes bools (np.floor_divide / np.remainder / np.fmod of bools give int8, np.divide float64),
torch raises ("div_floor_cpu" not implemented for 'Bool'), ONNX's Div/Mod take no bool, and TVM
accepted them only to fail lowering (tirx.floordiv of bool): a bool-valued `True // False` had no
one meaning (the interpreter's floor and trunc paths disagreed). Cast to an integer type instead.
"""

from __future__ import annotations

import numpy as np
import pytest

import transpile
import transpile.relay as relay
from transpile.errors import RelayTypeError
from transpile.relay import expr as rx

DIVISION_OPS = ["divide", "floor_divide", "trunc_divide", "mod", "trunc_mod", "floor_mod"]
BACKENDS = ["interpreter", "python", "cpp", "tir"]

BOOLS_A = np.array([True, True, False, False])
BOOLS_B = np.array([True, False, True, False])


def _program(op: str, dtype: str = "bool") -> str:
    operands = "%a, %b" if dtype == "bool" else f'cast(%a, dtype="{dtype}"), cast(%b, dtype="{dtype}")'
    return (
        "def @main(%a: Tensor[(4), bool], %b: Tensor[(4), bool]) {\n"
        f"  add({op}({operands}), {op}({operands}))\n"
        "}"
    )


@pytest.mark.parametrize("op", DIVISION_OPS)
def test_bool_operands_are_a_located_type_error(op):
    with pytest.raises(RelayTypeError, match=f"{op} does not take bool operands; cast them to an integer type") as info:
        relay.transform.InferType()(relay.parse(_program(op)))
    assert (info.value.line, info.value.column) == (2, 7), str(info.value)  # the call, not the function


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_backend_gets_a_bool_division(backend):
    with pytest.raises(RelayTypeError, match="floor_divide does not take bool operands"):
        transpile.compile(relay.parse(_program("floor_divide")), backend=backend)(BOOLS_A, BOOLS_B)


def test_bool_operands_are_rejected_when_built_with_the_builder():
    a, b = relay.var("a", relay.TensorType((4,), "bool")), relay.var("b", relay.TensorType((4,), "bool"))
    with pytest.raises(RelayTypeError, match="mod does not take bool operands"):
        relay.infer_type_expr(relay.Function([a, b], rx.Call(rx.Op.get("mod"), [a, b])))


def test_integer_and_float_operands_still_type_check():
    for op in DIVISION_OPS:
        for dtype in ("int8", "uint8", "int32", "float32"):
            relay.transform.InferType()(relay.parse(_program(op, dtype)))


@pytest.mark.parametrize("backend", ["python", "cpp", "tir"])
def test_the_suggested_cast_to_int8_agrees_on_every_backend(backend):
    """What the error message asks for: the int8 results of numpy's promotion, division by 0 giving 0."""
    operands = 'cast(%a, dtype="int8"), cast(%b, dtype="int8")'
    calls = ", ".join(f"{op}({operands})" for op in DIVISION_OPS)
    text = f"def @main(%a: Tensor[(4), bool], %b: Tensor[(4), bool]) {{\n  ({calls})\n}}"
    expected = transpile.compile(relay.parse(text), backend="interpreter")(BOOLS_A, BOOLS_B)
    got = transpile.compile(relay.parse(text), backend=backend)(BOOLS_A, BOOLS_B)
    for op, want, have in zip(DIVISION_OPS, expected, got):
        np.testing.assert_array_equal(np.asarray(have), np.asarray(want), err_msg=op)
        # 1/1 = 1, 1/0 = 0 (integer division by 0), 0/1 = 0, 0/0 = 0; remainders all 0
        quotient = op in ("divide", "floor_divide", "trunc_divide")
        np.testing.assert_array_equal(np.asarray(want), [1, 0, 0, 0] if quotient else [0, 0, 0, 0], err_msg=op)
