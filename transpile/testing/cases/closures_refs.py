"""Closures (capture, escape, currying, Python callables as arguments) and references (aliasing, refs as values)."""

from __future__ import annotations

from ...backends.base import ADTS, CLOSURES, NON_TAIL_RECURSION, POLYMORPHISM, RECURSION, REFS
from ..case import Case
from ._values import ADTValue, RefValue, f32, i32, rand


def _one_cell_three_ways(value: int) -> tuple:
    """The same RefValue as two arguments and inside an ADT value (the inputs' deep copy keeps that)."""
    cell = RefValue(i32(value))
    return (cell, cell, ADTValue("Hold", (cell, i32(100))))


def _double_contents(cell: RefValue) -> tuple:
    """A Python function writing into the reference the program passes it."""
    cell.value = cell.value * i32(2)
    return ()


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
        "ref_argument_write_visible",
        """
def @main(%r: ref(int32), %x: int32) -> int32 {
  let %old = ref_read(%r);
  let %ignored = ref_write(%r, %old + %x);
  %old
}""",
        inputs=(RefValue(i32(5)), i32(3)),
        expected=i32(5),
        inputs_after=(RefValue(i32(8)), i32(3)),
        features={REFS},
        description="the caller's RefValue holds what the program wrote into it",
    ),
    Case(
        "ref_argument_aliasing",
        """
type Holder {
  Hold(ref(int32), int32),
}

def @main(%a: ref(int32), %b: ref(int32), %h: Holder) -> (int32, int32) {
  let %i1 = ref_write(%a, ref_read(%a) + 1);
  let %i2 = ref_write(%b, ref_read(%b) * 10);
  let %i3 = match (%h) { Hold(%c, %n) => ref_write(%c, ref_read(%c) + %n) };
  (ref_read(%a), ref_read(%b))
}""",
        inputs=_one_cell_three_ways(1),
        expected=(i32(120), i32(120)),
        inputs_after=_one_cell_three_ways(120),
        features={REFS, ADTS},
        description="one RefValue passed as two arguments and inside an ADT value is one cell: (1 + 1) * 10 + 100",
    ),
    Case(
        "ref_written_by_python_callback",
        """
def @main(%f: fn (ref(int32)) -> (), %x: int32) -> int32 {
  let %r = ref(%x);
  let %done = %f(%r);
  ref_read(%r) + 1
}""",
        inputs=(_double_contents, i32(20)),
        expected=i32(41),
        features={CLOSURES, REFS},
        description="a Python function passed in writes into a reference the program created",
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
