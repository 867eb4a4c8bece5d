"""Global, mutual and local recursion, tail and non-tail, including a 100 000-step tail-recursive loop."""

from __future__ import annotations

import numpy as np

from ...backends.base import CLOSURES, NON_TAIL_RECURSION, RECURSION
from ..case import Case
from ._values import boolean, i32, rand


def _halve_and_shift(x, steps):
    for _ in range(steps):
        x = x * np.float32(0.5) + np.float32(1.0)
    return x


THEME = "recursion"

CASES = [
    Case(
        "fibonacci",
        """
def @fib(%n: int32) -> int32 {
  if (%n < 2) {
    %n
  } else {
    @fib(%n - 1) + @fib(%n - 2)
  }
}

def @main(%n: int32) -> int32 {
  @fib(%n)
}""",
        inputs=(i32(15),),
        expected=i32(610),
        features={RECURSION, NON_TAIL_RECURSION},
    ),
    Case(
        "factorial_tail_accumulator",
        """
def @fact(%n: int32, %acc: int32) -> int32 {
  if (%n == 0) {
    %acc
  } else {
    @fact(%n - 1, %acc * %n)
  }
}

def @main(%n: int32) -> int32 {
  @fact(%n, 1)
}""",
        inputs=(i32(10),),
        expected=i32(3628800),
        features={RECURSION},
    ),
    Case(
        "mutual_recursion_even_odd",
        """
def @is_even(%n: int32) -> bool {
  if (%n == 0) {
    True
  } else {
    @is_odd(%n - 1)
  }
}

def @is_odd(%n: int32) -> bool {
  if (%n == 0) {
    False
  } else {
    @is_even(%n - 1)
  }
}

def @main(%n: int32) -> (bool, bool) {
  (@is_even(%n), @is_odd(%n))
}""",
        inputs=(i32(7),),
        expected=(boolean(False), boolean(True)),
        features={RECURSION},
    ),
    Case(
        "ackermann",
        """
def @ack(%m: int32, %n: int32) -> int32 {
  if (%m == 0) {
    %n + 1
  } else {
    if (%n == 0) {
      @ack(%m - 1, 1)
    } else {
      @ack(%m - 1, @ack(%m, %n - 1))
    }
  }
}

def @main(%m: int32, %n: int32) -> int32 {
  @ack(%m, %n)
}""",
        inputs=(i32(2), i32(3)),
        expected=i32(9),
        features={RECURSION, NON_TAIL_RECURSION},
    ),
    Case(
        "gcd_tail",
        """
def @gcd(%a: int32, %b: int32) -> int32 {
  if (%b == 0) {
    %a
  } else {
    @gcd(%b, mod(%a, %b))
  }
}

def @main(%a: int32, %b: int32) -> int32 {
  @gcd(%a, %b)
}""",
        inputs=(i32(1071), i32(462)),
        expected=i32(21),
        features={RECURSION},
    ),
    Case(
        "tensor_loop_tail",
        """
def @loop(%i: int32, %x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  if (%i == 0) {
    %x
  } else {
    @loop(%i - 1, %x * 0.5f + 1f)
  }
}

def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  @loop(10, %x)
}""",
        inputs=(rand(91, 3, low=-10, high=10),),
        expected=lambda x: _halve_and_shift(x, 10),
        features={RECURSION},
    ),
    Case(
        "local_tail_loop",
        """
def @main(%n: int32) -> int32 {
  let %loop = fn (%i: int32, %acc: int32) -> int32 {
    if (%i == 0) {
      %acc
    } else {
      %loop(%i - 1, %acc + %i)
    }
  };
  %loop(%n, 0)
}""",
        inputs=(i32(100),),
        expected=i32(5050),
        features={CLOSURES, RECURSION},
    ),
    Case(
        "deep_tail_recursion_100000",
        """
def @countdown(%n: int32, %steps: int32) -> int32 {
  if (%n == 0) {
    %steps
  } else {
    @countdown(%n - 1, %steps + 1)
  }
}

def @main(%n: int32) -> int32 {
  @countdown(%n, 0)
}""",
        inputs=(i32(100_000),),
        expected=i32(100_000),
        features={RECURSION},
        description="a backend must run self tail calls in constant stack (e.g. as a loop)",
    ),
    Case(
        "deep_local_tail_recursion_100000",
        """
def @main(%n: int32) -> int32 {
  let %countdown = fn (%i: int32, %steps: int32) -> int32 {
    if (%i == 0) {
      %steps
    } else {
      %countdown(%i - 1, %steps + 2)
    }
  };
  %countdown(%n, 0)
}""",
        inputs=(i32(100_000),),
        expected=i32(200_000),
        features={CLOSURES, RECURSION},
    ),
]
