"""Closures (capture, escape, currying, Python callables as arguments) and references (aliasing, refs as values)."""

from __future__ import annotations

from ...backends.base import ADTS, CLOSURES, NON_TAIL_RECURSION, POLYMORPHISM, RECURSION, REFS
from ..case import Case
from ._values import RefValue, f32, i32, rand

THEME = "closures_refs"

CASES = [
    Case(
        "closure_captures_tensor",
        """
def @main(%k: Tensor[(3), float32], %x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  let %scale = fn (%v: Tensor[(3), float32]) -> Tensor[(3), float32] { %v * %k };
  %scale(%scale(%x))
}""",
        inputs=(rand(71, 3), rand(72, 3)),
        expected=lambda k, x: x * k * k,
        features={CLOSURES},
    ),
    Case(
        "closure_returned_to_python",
        """
def @main(%k: Tensor[(2), float32]) -> fn (Tensor[(2), float32]) -> Tensor[(2), float32] {
  fn (%x: Tensor[(2), float32]) -> Tensor[(2), float32] { %x * %k }
}""",
        inputs=(f32([2.0, -3.0]),),
        apply=(f32([0.5, 4.0]),),
        expected=f32([1.0, -12.0]),
        features={CLOSURES},
        description="the result is a Python callable; it is called with `apply`",
    ),
    Case(
        "curried_adder",
        """
def @adder(%a: int32) -> fn (int32) -> fn (int32) -> int32 {
  fn (%b: int32) -> fn (int32) -> int32 {
    fn (%c: int32) -> int32 { %a * 100 + %b * 10 + %c }
  }
}

def @main(%a: int32, %b: int32, %c: int32) -> int32 {
  let %f = @adder(%a);
  let %g = %f(%b);
  %g(%c)
}""",
        inputs=(i32(1), i32(2), i32(3)),
        expected=i32(123),
        features={CLOSURES},
    ),
    Case(
        "python_callable_argument",
        """
def @main(%f: fn (Tensor[(2), float32]) -> Tensor[(2), float32], %x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  %f(%f(%x)) + %x
}""",
        inputs=(lambda v: (v * 3).astype("float32"), f32([1.0, 2.0])),
        expected=f32([10.0, 20.0]),
        features={CLOSURES},
        description="a Python function passed for a function-typed parameter is called from the program",
    ),
    Case(
        "closure_in_tuple",
        """
def @main(%x: int32) -> int32 {
  let %fs = (fn (%a: int32) -> int32 { %a + 1 }, fn (%a: int32) -> int32 { %a * 2 });
  let %first = %fs.0;
  let %second = %fs.1;
  %second(%first(%x))
}""",
        inputs=(i32(4),),
        expected=i32(10),
        features={CLOSURES},
    ),
    Case(
        "counter_closure_with_ref",
        """
def @main() -> (int32, int32, int32) {
  let %count = ref(10);
  let %tick = fn () -> int32 {
    let %ignored = ref_write(%count, ref_read(%count) + 1);
    ref_read(%count)
  };
  let %a = %tick();
  let %b = %tick();
  (%a, %b, ref_read(%count))
}""",
        expected=(i32(11), i32(12), i32(12)),
        features={CLOSURES, REFS},
    ),
    Case(
        "ref_aliasing",
        """
def @main(%x: Tensor[(2), float32]) -> (Tensor[(2), float32], Tensor[(2), float32]) {
  let %r = ref(%x);
  let %alias = %r;
  let %ignored = ref_write(%alias, ref_read(%r) * 2f);
  (ref_read(%r), ref_read(%alias))
}""",
        inputs=(f32([1.0, -1.0]),),
        expected=(f32([2.0, -2.0]), f32([2.0, -2.0])),
        features={REFS},
    ),
    Case(
        "ref_holding_tuple",
        """
def @main(%x: int32) -> (int32, float32) {
  let %r = ref((%x, 1f));
  let %old = ref_read(%r);
  let %ignored = ref_write(%r, (%old.0 * 3, %old.1 + 0.5f));
  ref_read(%r)
}""",
        inputs=(i32(5),),
        expected=(i32(15), f32(1.5)),
        features={REFS},
    ),
    Case(
        "ref_returned",
        """
def @main(%x: float32) -> ref(float32) {
  let %r = ref(%x);
  let %ignored = ref_write(%r, ref_read(%r) + 1f);
  %r
}""",
        inputs=(f32(2.5),),
        expected=RefValue(f32(3.5)),
        features={REFS},
    ),
    Case(
        "ref_argument",
        """
def @main(%r: ref(int32)) -> int32 {
  let %before = ref_read(%r);
  let %ignored = ref_write(%r, %before * 2);
  ref_read(%r) + %before
}""",
        inputs=(RefValue(i32(21)),),
        expected=i32(63),
        features={REFS},
    ),
    Case(
        "closures_capture_each_recursion_level",
        """
def @make(%n: int32) -> List[fn (int32) -> int32] {
  if (%n == 0) {
    Nil
  } else {
    Cons(fn (%x: int32) -> int32 { %x * %n }, @make(%n - 1))
  }
}

def @main(%x: int32) -> int32 {
  let %apply = fn (%f: fn (int32) -> int32) -> int32 { %f(%x) };
  @sum(@map(%apply, @make(3)))
}""",
        prelude=True,
        inputs=(i32(2),),
        expected=i32(2 * 3 + 2 * 2 + 2 * 1),
        features={ADTS, CLOSURES, POLYMORPHISM, RECURSION, NON_TAIL_RECURSION},
    ),
]
