"""Call-time errors: wrong arity, shape, dtype or kind of value, and run-time failures, must raise
transpile.EvaluationError (a TranspileError) before anything runs — never crash, never compute garbage.

The message regexes are loose on purpose: they ask that the message names the offending argument
by its 1-based position ("argument 2") or, for arity errors, the expected count ("2 argument(s)").
"""

from __future__ import annotations

import numpy as np

from ...backends.base import ADTS, CLOSURES, POLYMORPHISM
from ...errors import EvaluationError
from ..case import Case
from ._values import ADTValue, f32, i32, plist, rand

THEME = "errors"

_SCALE = """
def @main(%x: Tensor[(3), float32], %n: int32) -> Tensor[(3), float32] {
  %x * cast(%n, dtype="float32")
}"""


def _argument(position: int):
    return (EvaluationError, rf"argument {position}\b")


_ARITY = (EvaluationError, r"\b2 argument")

CASES = [
    Case("wrong_shape", _SCALE, inputs=(rand(131, 4), i32(2)), raises=_argument(1)),
    Case("wrong_rank", _SCALE, inputs=(rand(132, 3, 1), i32(2)), raises=_argument(1)),
    Case("wrong_dtype", _SCALE, inputs=(np.ones(3, dtype="float64"), i32(2)), raises=_argument(1)),
    Case("wrong_scalar_dtype", _SCALE, inputs=(rand(133, 3), np.asarray(2, dtype="int64")), raises=_argument(2)),
    Case("too_few_arguments", _SCALE, inputs=(rand(134, 3),), raises=_ARITY),
    Case("too_many_arguments", _SCALE, inputs=(rand(135, 3), i32(2), i32(3)), raises=_ARITY),
    Case("tuple_for_tensor", _SCALE, inputs=((rand(136, 3), rand(137, 3)), i32(2)), raises=_argument(1)),
    Case("python_list_for_tensor", _SCALE, inputs=([1.0, 2.0, 3.0], i32(2)), raises=_argument(1)),
    Case("lossy_python_number", _SCALE, inputs=(rand(138, 3), 2.5), raises=_argument(2)),
    Case("none_for_tensor", _SCALE, inputs=(None, i32(2)), raises=_argument(1)),
    Case(
        "tensor_for_tuple",
        """
def @main(%t: (int32, int32)) -> int32 {
  %t.0 + %t.1
}""",
        inputs=(i32(3),),
        raises=_argument(1),
    ),
    Case(
        "unknown_constructor",
        """
def @main(%xs: List[int32]) -> List[int32] {
  %xs
}""",
        prelude=True,
        inputs=(ADTValue("Leaf", ()),),
        raises=_argument(1),
        features={ADTS},
    ),
    Case(
        "wrong_field_inside_list",
        """
def @main(%xs: List[int32]) -> List[int32] {
  %xs
}""",
        prelude=True,
        inputs=(plist([i32(1), f32(2.0)]),),
        raises=_argument(1),
        features={ADTS},
    ),
    Case(
        "non_callable_for_function",
        """
def @main(%f: fn (int32) -> int32, %x: int32) -> int32 {
  %f(%x)
}""",
        inputs=(3, i32(1)),
        raises=_argument(1),
        features={CLOSURES},
    ),
    Case(
        "incomplete_match_fails_at_run_time",
        """
def @main(%xs: List[int32]) -> int32 {
  @hd(%xs)
}""",
        prelude=True,
        inputs=(plist([]),),
        raises=(EvaluationError, r"match"),
        features={ADTS, POLYMORPHISM},
    ),
    Case(
        "python_callable_returns_wrong_dtype",
        """
def @main(%f: fn (int32) -> int32) -> int32 {
  %f(1) + 1
}""",
        inputs=(lambda x: np.float64(2.0),),
        raises=(EvaluationError, r"result"),
        features={CLOSURES},
    ),
]
