"""The interpreter runs self tail calls as loops (issue 12, item 22): global functions and
let-bound closures, through if, let and match, with closures made in a round keeping their values."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
import transpile.relay as relay
from transpile.errors import EvaluationError
from transpile.relay.interpreter import compiler

COUNT_DOWN = """
def @loop(%i: int32, %acc: int32) -> int32 {
  if (%i == 0) { %acc } else { @loop(%i - 1, %acc + 1) }
}
def @main(%n: int32) -> int32 { @loop(%n, 0) }
"""


@pytest.fixture
def shallow(monkeypatch):
    """A call-depth limit of 1000: a loop of more steps proves that no frames pile up."""
    monkeypatch.setattr(compiler, "MAX_CALL_DEPTH", 1000)


def evaluate(text: str, *args, prelude: bool = False):
    mod = relay.parse(text, init_module=relay.Prelude().mod if prelude else None)
    return relay.evaluate(mod, *args)


def test_global_self_tail_call_loops(shallow):
    assert int(evaluate(COUNT_DOWN, np.int32(5000))) == 5000


def test_non_tail_self_call_still_counts_depth(shallow):
    text = """
    def @depth(%i: int32) -> int32 { if (%i == 0) { 0 } else { add(@depth(%i - 1), 1) } }
    def @main(%n: int32) -> int32 { @depth(%n) }
    """
    assert int(evaluate(text, np.int32(500))) == 500
    with pytest.raises(EvaluationError, match="recursion too deep"):
        evaluate(text, np.int32(5000))


def test_let_bound_closure_tail_call_loops_and_keeps_its_environment(shallow):
    text = """
    def @main(%n: int32, %step: int32) -> int32 {
      let %loop = fn (%i: int32, %acc: int32) -> int32 {
        if (%i == 0) { %acc } else { let %next = %acc + %step; %loop(%i - 1, %next) }
      };
      %loop(%n, 0)
    }
    """
    assert int(evaluate(text, np.int32(4000), np.int32(3))) == 12000


def test_tail_call_in_a_match_clause_loops(shallow):
    text = """
    def @length(%xs: List[int32], %acc: int32) -> int32 {
      match (%xs) {
        Cons(_, %rest) => @length(%rest, %acc + 1),
        Nil => %acc,
      }
    }
    def @build(%i: int32, %xs: List[int32]) -> List[int32] {
      if (%i == 0) { %xs } else { @build(%i - 1, Cons(%i, %xs)) }
    }
    def @main(%n: int32) -> int32 { @length(@build(%n, Nil), 0) }
    """
    assert int(evaluate(text, np.int32(3000), prelude=True)) == 3000


def test_closures_made_in_each_round_keep_their_own_values(shallow):
    # Each round captures its %i in a closure; a frame reused across rounds would make every
    # closure see the last %i.
    text = """
    def @collect(%i: int32, %fs: List[fn () -> int32]) -> List[fn () -> int32] {
      if (%i == 0) { %fs } else {
        let %f = fn () -> int32 { %i * 10 };
        @collect(%i - 1, Cons(%f, %fs))
      }
    }
    def @total(%fs: List[fn () -> int32], %acc: int32) -> int32 {
      match (%fs) {
        Cons(%f, %rest) => @total(%rest, %acc + %f()),
        Nil => %acc,
      }
    }
    def @main(%n: int32) -> int32 { @total(@collect(%n, Nil), 0) }
    """
    n = 2000
    assert int(evaluate(text, np.int32(n), prelude=True)) == 10 * n * (n + 1) // 2


def test_tail_call_of_another_function_is_an_ordinary_call(shallow):
    text = """
    def @even(%i: int32) -> bool { if (%i == 0) { True } else { @odd(%i - 1) } }
    def @odd(%i: int32) -> bool { if (%i == 0) { False } else { @even(%i - 1) } }
    def @main(%n: int32) -> bool { @even(%n) }
    """
    assert bool(evaluate(text, np.int32(101))) is False
    with pytest.raises(EvaluationError, match="recursion too deep"):
        evaluate(text, np.int32(5000))


def test_shared_call_node_in_tail_position_stays_an_ordinary_call(shallow):
    # `%0` is one node used in a tail position and as an operand: its value is cached, so it
    # must be a value, never a tail-call marker.
    text = """
    def @f(%i: int32) -> int32 {
      if (%i == 0) { 0 } else { %0 = @f(%i - 1); if (%i > 5) { %0 } else { add(%0, 1) } }
    }
    def @main(%n: int32) -> int32 { @f(%n) }
    """
    assert int(evaluate(text, np.int32(10))) == 5


@pytest.mark.slow
def test_a_million_step_tail_recursive_loop_runs_on_the_interpreter_backend():
    fn = transpile.compile(relay.parse(COUNT_DOWN), backend="interpreter")
    assert int(fn(np.int32(1_000_000))) == 1_000_000
