"""Algebraic data types defined by programs, ADT values crossing the boundary, and polymorphism."""

from __future__ import annotations

import numpy as np

from ...backends.base import ADTS, CLOSURES, NON_TAIL_RECURSION, POLYMORPHISM, RECURSION
from ..case import Case
from ._values import ADTValue, f32, i32, plist, rand, some

THEME = "adts"

_SHAPES = """
type Shape {
  Circle(float32),
  Rect(float32, float32),
  Dot,
}

def @area(%s: Shape) -> float32 {
  match (%s) {
    Circle(%r) => 3f * %r * %r,
    Rect(%w, %h) => %w * %h,
    Dot => 0f,
  }
}
"""

CASES = [
    Case(
        "user_type_match",
        _SHAPES + """
def @main(%w: float32) -> (float32, float32, float32) {
  (@area(Circle(2f)), @area(Rect(%w, 3f)), @area(Dot))
}""",
        inputs=(f32(1.5),),
        expected=(f32(12.0), f32(4.5), f32(0.0)),
        features={ADTS},
    ),
    Case(
        "user_type_argument_and_result",
        _SHAPES + """
def @main(%s: Shape) -> (Shape, float32) {
  let %bigger = match (%s) {
    Circle(%r) => Circle(%r * 2f),
    Rect(%w, %h) => Rect(%h, %w),
    Dot => Dot,
  };
  (%bigger, @area(%s))
}""",
        inputs=(ADTValue("Rect", (f32(2.0), f32(5.0))),),
        expected=(ADTValue("Rect", (f32(5.0), f32(2.0))), f32(10.0)),
        features={ADTS},
    ),
    Case(
        "polymorphic_user_type",
        """
type Pair[A, B] {
  MkPair(A, B),
}

def @swap[A, B](%p: Pair[A, B]) -> Pair[B, A] {
  match (%p) {
    MkPair(%a, %b) => MkPair(%b, %a),
  }
}

def @main(%x: int32, %y: Tensor[(2), float32]) -> (Pair[Tensor[(2), float32], int32], Pair[int32, int32]) {
  (@swap(MkPair(%x, %y)), @swap(MkPair(%x, %x + 1)))
}""",
        inputs=(i32(7), f32([1.0, 2.0])),
        expected=(ADTValue("MkPair", (f32([1.0, 2.0]), i32(7))), ADTValue("MkPair", (i32(8), i32(7)))),
        features={ADTS, POLYMORPHISM},
    ),
    Case(
        "polymorphic_global_two_types",
        """
def @twice[A](%f: fn (A) -> A, %x: A) -> A {
  %f(%f(%x))
}

def @main(%i: int32, %v: Tensor[(3), float32]) -> (int32, Tensor[(3), float32]) {
  let %inc = fn (%a: int32) -> int32 { %a + 1 };
  let %half = fn (%a: Tensor[(3), float32]) -> Tensor[(3), float32] { %a * 0.5f };
  (@twice(%inc, %i), @twice(%half, %v))
}""",
        inputs=(i32(5), rand(81, 3)),
        expected=lambda i, v: (i32(7), v * np.float32(0.25)),
        features={CLOSURES, POLYMORPHISM},
    ),
    Case(
        "polymorphic_identity_on_adt_and_tuple",
        """
def @ident[A](%x: A) -> A {
  %x
}

def @main(%xs: List[int32], %t: (int32, float32)) -> (List[int32], (int32, float32)) {
  (@ident(%xs), @ident(%t))
}""",
        prelude=True,
        inputs=(plist([i32(1), i32(2)]), (i32(3), f32(4.0))),
        expected=(plist([i32(1), i32(2)]), (i32(3), f32(4.0))),
        features={ADTS, POLYMORPHISM},
    ),
    Case(
        "option_tensor_default",
        """
def @get_or(%o: Option[Tensor[(2), float32]], %default: Tensor[(2), float32]) -> Tensor[(2), float32] {
  match (%o) {
    Some(%v) => %v,
    None => %default,
  }
}

def @main(%x: Tensor[(2), float32], %d: Tensor[(2), float32]) -> (Tensor[(2), float32], Tensor[(2), float32]) {
  (@get_or(Some(%x), %d), @get_or(None, %d))
}""",
        prelude=True,
        inputs=(rand(82, 2), rand(83, 2)),
        expected=lambda x, d: (x.copy(), d.copy()),
        features={ADTS},
    ),
    Case(
        "incomplete_match_that_succeeds",
        """
def @main(%o: Option[int32]) -> int32 {
  match? (%o) {
    Some(%v) => %v * 2,
  }
}""",
        prelude=True,
        inputs=(some(i32(21)),),
        expected=i32(42),
        features={ADTS},
    ),
    Case(
        "tuple_and_wildcard_patterns",
        """
def @main(%xs: List[int32], %ys: List[int32]) -> int32 {
  match ((%xs, %ys)) {
    (Nil, Nil) => 0,
    (Cons(%x, _), Nil) => %x,
    (Nil, Cons(%y, _)) => %y,
    (Cons(%x, _), Cons(%y, _)) => %x * %y,
  }
}""",
        prelude=True,
        inputs=(plist([i32(6)]), plist([i32(7), i32(1)])),
        expected=i32(42),
        features={ADTS},
    ),
    Case(
        "list_of_tensors_round_trip",
        """
def @total(%xs: List[Tensor[(2), float32]], %zero: Tensor[(2), float32]) -> Tensor[(2), float32] {
  match (%xs) {
    Cons(%x, %rest) => %x + @total(%rest, %zero),
    Nil => %zero,
  }
}

def @main(%xs: List[Tensor[(2), float32]], %zero_like: Tensor[(2), float32]) -> (Tensor[(2), float32], List[Tensor[(2), float32]]) {
  (@total(%xs, zeros_like(%zero_like)), %xs)
}""",
        prelude=True,
        inputs=(plist([rand(84, 2), rand(85, 2), rand(86, 2)]), rand(87, 2)),
        expected=lambda xs, _: (
            xs.fields[0] + xs.fields[1].fields[0] + xs.fields[1].fields[1].fields[0],
            plist([xs.fields[0], xs.fields[1].fields[0], xs.fields[1].fields[1].fields[0]]),
        ),
        features={ADTS, RECURSION, NON_TAIL_RECURSION},
    ),
]
