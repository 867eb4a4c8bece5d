"""The classics of relay-aot's and py_converter's test suites: arithmetic, globals, recursion, nat, refs, tuples, match."""

from __future__ import annotations

import numpy as np

from ...backends.base import ADTS, CLOSURES, NON_TAIL_RECURSION, POLYMORPHISM, RECURSION, REFS
from ..case import Case
from ._values import f32, i32, nat, plist, rand

THEME = "classics"

CASES = [
    Case(
        "identity",
        """
def @main(%x: Tensor[(10), float32]) -> Tensor[(10), float32] {
  %x
}""",
        inputs=(rand(1, 10),),
        expected=lambda x: x.copy(),
    ),
    Case(
        "add",
        """
def @main(%x: Tensor[(10), float32], %y: Tensor[(10), float32]) -> Tensor[(10), float32] {
  add(%x, %y)
}""",
        inputs=(rand(2, 10), rand(3, 10)),
        expected=lambda x, y: x + y,
    ),
    Case(
        "multiply_add",
        """
def @main(%x: Tensor[(3, 4), float32], %y: Tensor[(3, 4), float32]) -> Tensor[(3, 4), float32] {
  multiply(%x + %y, %y)
}""",
        inputs=(rand(4, 3, 4), rand(5, 3, 4)),
        expected=lambda x, y: (x + y) * y,
    ),
    Case(
        "double_via_global",
        """
def @double(%x: Tensor[(5), float32]) -> Tensor[(5), float32] {
  %x + %x
}

def @main(%x: Tensor[(5), float32]) -> Tensor[(5), float32] {
  @double(@double(%x))
}""",
        inputs=(rand(6, 5),),
        expected=lambda x: x * 4,
    ),
    Case(
        "constant_42",
        """
def @main() -> int32 {
  42
}""",
        expected=i32(42),
    ),
    Case(
        "add_42",
        """
def @main(%x: int32) -> int32 {
  %x + 42
}""",
        inputs=(i32(-50),),
        expected=i32(-8),
    ),
    Case(
        "int_multiply_python_int",
        """
def @main(%x: int32) -> int32 {
  %x * 3
}""",
        inputs=(7,),
        expected=i32(21),
        description="a Python int argument converts to an int32 scalar",
    ),
    Case(
        "int_arithmetic",
        """
def @main(%a: int32, %b: int32) -> (int32, int32, int32) {
  (%a - %b * 2, %a * %a, subtract(%b, %a))
}""",
        inputs=(i32(9), i32(4)),
        expected=(i32(1), i32(81), i32(-5)),
    ),
    Case(
        "abs_via_if_negative",
        """
def @main(%x: float32) -> float32 {
  if (less(%x, 0f)) {
    negative(%x)
  } else {
    %x
  }
}""",
        inputs=(f32(-3.5),),
        expected=f32(3.5),
    ),
    Case(
        "abs_via_if_positive",
        """
def @main(%x: float32) -> float32 {
  if (less(%x, 0f)) {
    negative(%x)
  } else {
    %x
  }
}""",
        inputs=(2.25,),
        expected=f32(2.25),
        description="a Python float argument converts to a float32 scalar",
    ),
    Case(
        "global_recursive_sum",
        """
def @sum_up(%n: int32) -> int32 {
  if (%n == 0) {
    0
  } else {
    %n + @sum_up(%n - 1)
  }
}

def @main(%n: int32) -> int32 {
  @sum_up(%n)
}""",
        inputs=(i32(10),),
        expected=i32(55),
        features={RECURSION, NON_TAIL_RECURSION},
    ),
    Case(
        "local_recursive_sum",
        """
def @main(%n: int32) -> int32 {
  let %sum_up = fn (%i: int32) -> int32 {
    if (%i == 0) {
      0
    } else {
      %i + %sum_up(%i - 1)
    }
  };
  %sum_up(%n)
}""",
        inputs=(i32(10),),
        expected=i32(55),
        features={CLOSURES, RECURSION, NON_TAIL_RECURSION},
    ),
    Case(
        "nat_three",
        """
def @main() -> nat {
  succ(succ(succ(zero)))
}""",
        prelude=True,
        expected=nat(3),
        features={ADTS},
    ),
    Case(
        "nat_add_values",
        """
def @main(%x: nat, %y: nat) -> nat {
  @nat_add(%x, %y)
}""",
        prelude=True,
        inputs=(nat(2), nat(3)),
        expected=nat(5),
        features={ADTS, RECURSION, NON_TAIL_RECURSION},
    ),
    Case(
        "nat_to_scalar",
        """
def @to_int(%n: nat) -> int32 {
  match (%n) {
    zero => 0,
    succ(%m) => 1 + @to_int(%m),
  }
}

def @main(%n: nat) -> int32 {
  @to_int(%n)
}""",
        prelude=True,
        inputs=(nat(7),),
        expected=i32(7),
        features={ADTS, RECURSION, NON_TAIL_RECURSION},
    ),
    Case(
        "ref_increment",
        """
def @main(%x: int32) -> int32 {
  let %r = ref(%x);
  let %ignored = ref_write(%r, ref_read(%r) + 1);
  ref_read(%r)
}""",
        inputs=(i32(41),),
        expected=i32(42),
        features={REFS},
    ),
    Case(
        "tuple_swap",
        """
def @main(%x: Tensor[(2), float32], %y: int32) -> (int32, Tensor[(2), float32]) {
  let %t = (%x, %y);
  (%t.1, %t.0)
}""",
        inputs=(rand(7, 2), i32(3)),
        expected=lambda x, y: (y.copy(), x.copy()),
    ),
    Case(
        "empty_tuple",
        """
def @main() -> () {
  ()
}""",
        expected=(),
    ),
    Case(
        "nested_tuple",
        """
def @main(%x: float32) -> ((float32, (float32,)), ()) {
  ((%x, (%x * 2f,)), ())
}""",
        inputs=(f32(1.5),),
        expected=((f32(1.5), (f32(3.0),)), ()),
    ),
    Case(
        "arbitrary_let_nesting",
        """
def @main(%x: int32) -> int32 {
  let %a = {
    let %b = %x + 1;
    let %c = {
      let %d = %b * 2;
      %d + %x
    };
    %c - 1
  };
  %a * 10
}""",
        inputs=(i32(5),),
        expected=i32(((5 + 1) * 2 + 5 - 1) * 10),
    ),
    Case(
        "compose_globals",
        """
def @inc(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  %x + 1f
}

def @twice(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  %x * 2f
}

def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  let %f = @compose(@twice, @inc);
  %f(%x)
}""",
        prelude=True,
        inputs=(rand(8, 3),),
        expected=lambda x: (x + 1) * 2,
        features={CLOSURES, POLYMORPHISM},
    ),
    Case(
        "higher_order_global",
        """
def @apply_twice(%f: fn (int32) -> int32, %x: int32) -> int32 {
  %f(%f(%x))
}

def @square(%x: int32) -> int32 {
  %x * %x
}

def @main(%x: int32) -> int32 {
  @apply_twice(@square, %x)
}""",
        inputs=(i32(3),),
        expected=i32(81),
        features={CLOSURES},
    ),
    Case(
        "escaping_local_recursive_closure",
        """
def @make(%k: int32) -> fn (int32) -> int32 {
  let %loop = fn (%n: int32) -> int32 {
    if (%n == 0) {
      %k
    } else {
      %loop(%n - 1) + %k
    }
  };
  %loop
}

def @main(%k: int32, %n: int32) -> int32 {
  let %f = @make(%k);
  %f(%n)
}""",
        inputs=(i32(3), i32(4)),
        expected=i32(15),
        features={CLOSURES, RECURSION, NON_TAIL_RECURSION},
        description="a let-bound recursive closure capturing %k outlives the call that made it",
    ),
    Case(
        "match_order_first_clause_wins",
        """
def @main(%xs: List[int32]) -> int32 {
  match (%xs) {
    Cons(_, Nil) => 1,
    Cons(_, _) => 2,
    _ => 3,
  }
}""",
        prelude=True,
        inputs=(plist([i32(5)]),),
        expected=i32(1),
        features={ADTS},
    ),
    Case(
        "match_order_later_clause",
        """
def @main(%xs: List[int32]) -> int32 {
  match (%xs) {
    Cons(_, Nil) => 1,
    Cons(_, _) => 2,
    _ => 3,
  }
}""",
        prelude=True,
        inputs=(plist([i32(5), i32(6)]),),
        expected=i32(2),
        features={ADTS},
    ),
    Case(
        "nested_patterns",
        """
def @main(%xs: List[int32]) -> int32 {
  match (%xs) {
    Cons(%a, Cons(%b, Cons(%c, Nil))) => %a * 100 + %b * 10 + %c,
    Cons(%a, Cons(%b, _)) => %a + %b,
    _ => 0,
  }
}""",
        prelude=True,
        inputs=(plist([i32(1), i32(2), i32(3)]),),
        expected=i32(123),
        features={ADTS},
    ),
    Case(
        "effects_left_to_right",
        """
def @main() -> (int32, int32, int32, int32) {
  let %counter = ref(0);
  let %next = fn () -> int32 {
    let %v = ref_read(%counter);
    let %ignored = ref_write(%counter, %v + 1);
    %v
  };
  let %diff = subtract(%next(), %next());
  (%next(), %next(), %diff, ref_read(%counter))
}""",
        expected=(i32(2), i32(3), i32(-1), i32(4)),
        features={CLOSURES, REFS},
        description="call arguments and tuple fields are evaluated left to right, each exactly once",
    ),
    Case(
        "match_data_evaluated_once",
        """
def @main() -> (int32, int32) {
  let %count = ref(0);
  let %make = fn () -> List[int32] {
    let %ignored = ref_write(%count, ref_read(%count) + 1);
    Cons(7, Nil)
  };
  let %first = match (%make()) {
    Nil => 0,
    Cons(%x, Nil) => %x,
    Cons(%x, _) => 0 - %x,
  };
  (%first, ref_read(%count))
}""",
        prelude=True,
        expected=(i32(7), i32(1)),
        features={ADTS, CLOSURES, REFS},
    ),
    Case(
        "global_returned_as_value",
        """
def @square(%x: int32) -> int32 {
  %x * %x
}

def @main() -> fn (int32) -> int32 {
  @square
}""",
        apply=(i32(4),),
        expected=i32(16),
        features={CLOSURES},
    ),
    Case(
        "python_bool_and_numpy_scalar_arguments",
        """
def @main(%b: bool, %x: float32, %n: int64) -> (float32, int64) {
  if (%b) {
    (%x * 2f, %n + 1i64)
  } else {
    (%x, %n)
  }
}""",
        inputs=(True, np.float32(1.5), np.int64(2**40)),
        expected=(f32(3.0), np.asarray(2**40 + 1, dtype="int64")),
    ),
    Case(
        "match_var_pattern_binds_whole_value",
        """
def @main(%xs: List[int32]) -> (int32, List[int32]) {
  match (%xs) {
    %whole => (@length(%whole), %whole),
  }
}""",
        prelude=True,
        inputs=(plist([i32(1), i32(2)]),),
        expected=(i32(2), plist([i32(1), i32(2)])),
        features={ADTS, POLYMORPHISM, RECURSION, NON_TAIL_RECURSION},
    ),
]
