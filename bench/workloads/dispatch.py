"""Dispatch workloads: scalar recursion and Prelude ADTs, where per-call overhead is everything."""

from __future__ import annotations

import functools
import operator
import sys
from typing import Callable

import numpy as np

from . import Instance, Native, Workload, parse_workload

LOOP_STEPS = 1_000_000
FIB_N = 25
NAT_OPERANDS = (1000, 1000)
LIST_LENGTH = 10_000


def fib_calls(n: int) -> int:
    """Calls made by the doubly recursive fib(n): 2 * fib(n + 1) - 1."""
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1


def nat_steps(a: int, b: int) -> int:
    """Recursive steps of nat_add.rly: to_nat(a), to_nat(b), nat_add over a, count over a + b."""
    return a + b + a + (a + b)


def _fib_value(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def _i32(value: int):
    return np.int32(value)


# The natural plain-Python versions (the "numpy" peer for scalar code is plain Python).
def py_loop(n):
    acc = 0
    while n != 0:  # a tail-recursive loop is a while loop in Python
        n, acc = n - 1, acc + 3
    return acc


def py_fib(n):
    return n if n < 2 else py_fib(n - 1) + py_fib(n - 2)


def py_nat_add(a, b):
    def to_nat(n):
        nat = ()
        for _ in range(n):
            nat = (nat,)  # succ(x) is a 1-tuple holding x; zero is ()
        return nat

    def add(x, y):
        return y if x == () else (add(x[0], y),)

    def count(x):
        total = 0
        while x != ():
            x, total = x[0], total + 1
        return total

    return count(add(to_nat(a), to_nat(b)))


def py_foldl_sum(n):
    return functools.reduce(operator.add, list(range(1, n + 1)), 0)


def _python_native(fn) -> Callable:
    def factory():
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
        return Native(
            call=fn, convert_in=lambda args: tuple(int(a) for a in args), convert_out=np.int32, note="plain Python"
        )

    return factory


def _relax_fib():
    from .. import relax_peer

    return relax_peer.fib_native()


def workloads() -> list[Workload]:
    not_static = "n/a (no Relax version: needs ADTs / is not a static model)"
    return [
        Workload(
            name="loop",
            title=f"tail-recursive loop, {LOOP_STEPS:,} scalar adds",
            group="dispatch",
            build_module=lambda: parse_workload("loop.rly"),
            full=Instance(f"n={LOOP_STEPS}", (_i32(LOOP_STEPS),), _i32(3 * LOOP_STEPS), LOOP_STEPS),
            small=Instance("n=10000", (_i32(10_000),), _i32(30_000), 10_000),
            natives={"numpy": _python_native(py_loop)},
            not_applicable={
                "relax": "n/a (the Relax peer covers the static models and fib only)",
                "torch": "n/a (not a tensor model)",
                "torch1": "n/a (not a tensor model)",
            },
        ),
        Workload(
            name="fib",
            title=f"recursive fib({FIB_N}), int32",
            group="dispatch",
            build_module=lambda: parse_workload("fib.rly"),
            full=Instance(f"n={FIB_N}", (_i32(FIB_N),), _i32(_fib_value(FIB_N)), fib_calls(FIB_N)),
            small=Instance("n=15", (_i32(15),), _i32(_fib_value(15)), fib_calls(15)),
            natives={"numpy": _python_native(py_fib), "relax": _relax_fib},
            not_applicable={"torch": "n/a (not a tensor model)", "torch1": "n/a (not a tensor model)"},
        ),
        Workload(
            name="nat_add",
            title="Peano nat_add 1000 + 1000 (Prelude nat)",
            group="dispatch",
            build_module=lambda: parse_workload("nat_add.rly", prelude=True),
            full=Instance(
                "1000+1000", tuple(map(_i32, NAT_OPERANDS)), _i32(sum(NAT_OPERANDS)), nat_steps(*NAT_OPERANDS)
            ),
            small=Instance("100+100", (_i32(100), _i32(100)), _i32(200), nat_steps(100, 100)),
            natives={"numpy": _python_native(py_nat_add)},
            not_applicable={
                "relax": not_static,
                "torch": "n/a (not a tensor model)",
                "torch1": "n/a (not a tensor model)",
            },
        ),
        Workload(
            name="foldl_sum",
            title=f"foldl sum over a {LIST_LENGTH:,}-element List (Prelude)",
            group="dispatch",
            build_module=lambda: parse_workload("foldl_sum.rly", prelude=True),
            full=Instance(
                f"n={LIST_LENGTH}", (_i32(LIST_LENGTH),), _i32(LIST_LENGTH * (LIST_LENGTH + 1) // 2), 2 * LIST_LENGTH
            ),
            small=Instance("n=1000", (_i32(1000),), _i32(500_500), 2000),
            natives={"numpy": _python_native(py_foldl_sum)},
            not_applicable={
                "relax": not_static,
                "torch": "n/a (not a tensor model)",
                "torch1": "n/a (not a tensor model)",
            },
        ),
    ]
