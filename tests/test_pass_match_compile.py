"""compile_matches: one-level patterns only, first-match-wins, tuple patterns, match? failure marker."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.errors import EvaluationError
from transpile.passes import MATCH_FAIL_OP, compile_matches, to_anf
from transpile.passes.match_compile import is_match_fail
from transpile.relay import expr as E
from transpile.relay.visitor import ExprMutator, ExprVisitor
from transpile.runtime import ADTValue as V

from test_pass_anf import assert_anf

HEADER = '#[version = "0.0.5"]\n'

SHAPES = """
type T {
  A(int32),
  B(T, T),
  C,
}
"""


def typed(src: str, init=None):
    return relay.transform.InferType()(relay.parse(HEADER + src, init_module=init))


def compiled(src: str, init=None):
    mod = typed(src, init)
    return mod, compile_matches(to_anf(mod))


class _Patterns(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.matches = []
        self.fails = []

    def visit_match(self, m):
        self.matches.append(m)
        super().visit_match(m)

    def visit_call(self, call):
        if is_match_fail(call):
            self.fails.append(call)
        super().visit_call(call)


def patterns_of(mod) -> _Patterns:
    p = _Patterns()
    for func in mod.functions.values():
        p.visit(func)
    return p


def assert_one_level(mod):
    found = patterns_of(mod)
    for m in found.matches:
        assert m.complete
        for clause in m.clauses:
            lhs = clause.lhs
            if isinstance(lhs, E.PatternConstructor):
                assert all(isinstance(p, (E.PatternVar, E.PatternWildcard)) for p in lhs.patterns), lhs
            else:
                assert isinstance(lhs, (E.PatternVar, E.PatternWildcard)), lhs
        ctors = [c.lhs.constructor.name_hint for c in m.clauses if isinstance(c.lhs, E.PatternConstructor)]
        assert len(ctors) == len(set(ctors))
    return found


class _FailToEmptyMatch(ExprMutator):
    """Test-only: the interpreter cannot run transpile.match_fail (not a registered operator), so
    each marker becomes an empty `match?` on the enclosing scrutinee, which raises at run time."""

    def __init__(self):
        super().__init__()
        self.scrutinees = []

    def visit_match(self, m):
        self.scrutinees.append(m.data)
        try:
            return super().visit_match(m)
        finally:
            self.scrutinees.pop()

    def visit_call(self, call):
        if is_match_fail(call):
            return E.Match(self.scrutinees[-1], [], complete=False)
        return super().visit_call(call)


def runnable(mod):
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.functions[gv] = _FailToEmptyMatch().visit(func)
    return out


def t(*fields, ctor):
    return V(ctor, tuple(np.int32(f) if isinstance(f, int) else f for f in fields))


def A(n):
    return V("A", (np.int32(n),))


def B(x, y):
    return V("B", (x, y))


C = V("C", ())


NESTED = SHAPES + """
def @main(%x: T) -> int32 {
  match (%x) {
    B(A(%a), B(_, A(%q))) => add(%a, %q),
    B(A(%a2), _) => multiply(%a2, 10),
    B(C, %r) => 7,
    A(%z) => %z,
    _ => -1,
  }
}
"""


@pytest.mark.parametrize(
    "value, expected",
    [
        (B(A(2), B(C, A(5))), 7),  # first clause
        (B(A(2), B(C, C)), 20),  # second clause: inner pattern of the first fails
        (B(A(3), C), 30),
        (B(C, A(1)), 7),
        (A(9), 9),
        (C, -1),
        (B(B(C, C), C), -1),  # falls through to the wildcard
    ],
)
def test_nested_patterns_first_match_wins(value, expected):
    mod, out = compiled(NESTED)
    assert_one_level(out)
    assert_anf(out)
    relay.transform.InferType()(out)
    assert int(relay.evaluate(mod, value)) == expected
    assert int(relay.evaluate(out, value)) == expected


def test_complete_match_has_no_failure_marker_and_exact_shape():
    mod, out = compiled(NESTED)
    found = assert_one_level(out)
    assert not found.fails
    expected = typed(SHAPES + """
def @main(%x: T) -> int32 {
  let %t0 = match (%x) {
    A(%z) => {
      %z
    },
    B(%b0, %b1) => {
      let %m4 = match (%b0) {
        A(%a) => {
          let %m3 = match (%b1) {
            B(_, %b2) => {
              let %m2 = match (%b2) {
                A(%q) => {
                  let %t1 = add(%a, %q);
                  %t1
                },
                _ => {
                  let %t21 = multiply(%a, 10);
                  %t21
                },
              };
              %m2
            },
            _ => {
              let %t2 = multiply(%a, 10);
              %t2
            },
          };
          %m3
        },
        C => {
          7
        },
        _ => {
          -1
        },
      };
      %m4
    },
    _ => {
      -1
    },
  };
  %t0
}
""")
    relay.assert_structural_equal(out["main"], expected["main"])


def test_duplicated_clause_bodies_bind_fresh_variables():
    mod, out = compiled(NESTED)
    binders = []

    class Binders(ExprVisitor):
        def visit_let(self, let):
            node = let
            while isinstance(node, E.Let):
                binders.append(node.var)
                node = node.body
            super().visit_let(let)

        def visit_match(self, m):
            for c in m.clauses:
                binders.extend(relay.analysis.pattern_vars(c.lhs))
            super().visit_match(m)

    Binders().visit(out["main"])
    assert len(binders) == len(set(binders)), "a Var is bound twice"


def test_match_question_mark_failure_marker():
    src = SHAPES + """
def @main(%x: T) -> int32 {
  match? (%x) {
    B(A(%a), _) => %a,
    A(%z) => %z,
  }
}
"""
    mod, out = compiled(src)
    found = assert_one_level(out)
    assert len(found.fails) == 2  # B(C|B(..), _) and C
    for call in found.fails:
        assert call.op is E.Op.get(MATCH_FAIL_OP)
        assert call.args == ()
        assert call.attrs["message"] == "no clause of match at from_string:10:3 matched"
        assert call.checked_type == relay.TensorType((), "int32")
        assert list(call.type_args) == [relay.TensorType((), "int32")]
    # The interpreter refuses the unregistered marker operator up front, on any input.
    with pytest.raises(EvaluationError, match="transpile.match_fail is not in the operator registry"):
        relay.evaluate(out, A(1))
    run = runnable(out)
    assert int(relay.evaluate(run, A(4))) == 4
    assert int(relay.evaluate(run, B(A(6), C))) == 6
    with pytest.raises(EvaluationError, match="no clause"):
        relay.evaluate(run, B(C, C))
    with pytest.raises(EvaluationError, match="no clause"):
        relay.evaluate(run, C)
    with pytest.raises(EvaluationError, match="no clause"):
        relay.evaluate(mod, C)


def test_tuple_patterns_become_projections():
    src = """
def @main(%p: (int32, (float32, int32))) -> int32 {
  match (%p) {
    (%a, (_, %b)) => add(%a, %b),
  }
}
"""
    mod, out = compiled(src)
    assert_one_level(out)
    assert_anf(out)
    text = out.astext()
    assert "%p.0" in text and ".1" in text
    relay.transform.InferType()(out)
    assert int(relay.evaluate(out, (np.int32(3), (np.float32(1), np.int32(4))))) == 7


@pytest.mark.parametrize("x, y, expected", [(A(1), A(2), 3), (A(1), C, 0), (C, C, 0), (B(C, C), A(5), 1), (C, A(5), 1)])
def test_tuple_of_constructor_patterns_in_order(x, y, expected):
    src = SHAPES + """
def @main(%x: T, %y: T) -> int32 {
  match ((%x, %y)) {
    (A(%a), A(%b)) => add(%a, %b),
    (_, C) => 0,
    (%u, _) => 1,
  }
}
"""
    mod, out = compiled(src)
    assert_one_level(out)
    assert_anf(out)
    assert not patterns_of(out).fails
    relay.transform.InferType()(out)
    assert int(relay.evaluate(mod, x, y)) == expected
    assert int(relay.evaluate(out, x, y)) == expected


def test_prelude_zip_and_foldr1_agree_with_the_interpreter():
    prelude = relay.IRModule()
    relay.Prelude(prelude)
    src = """
def @main(%xs: List[int32], %ys: List[int32]) -> (List[(int32, int32)], int32) {
  let %f = fn (%a: int32, %b: int32) -> int32 { subtract(%a, %b) };
  (@zip(%xs, %ys), @foldr1(%f, %xs))
}
"""
    from transpile.passes import monomorphize

    mod = typed(src, prelude)
    out = compile_matches(to_anf(monomorphize(mod)))
    assert_one_level(out)
    assert_anf(out)
    run = runnable(out)

    def lst(*items):
        v = V("Nil", ())
        for x in reversed(items):
            v = V("Cons", (np.int32(x), v))
        return v

    for xs, ys, fold in [((1, 2, 3), (4, 5), 2), ((7,), (), 7), ((5, 1), (2, 2, 2), 4)]:
        pairs, folded = relay.evaluate(run, lst(*xs), lst(*ys))
        expect = V("Nil", ())
        for a, b in reversed(list(zip(xs, ys))):
            expect = V("Cons", ((np.int32(a), np.int32(b)), expect))
        assert pairs == expect
        assert int(folded) == fold
    with pytest.raises(EvaluationError, match="no clause"):
        relay.evaluate(run, lst(), lst())


def test_match_binding_whole_value_and_wildcard_first():
    src = SHAPES + """
def @main(%x: T) -> int32 {
  let %n = match (%x) {
    %whole => match (%whole) { C => 1, _ => 2 },
  };
  let %m = match (%x) { _ => 5 };
  add(%n, %m)
}
"""
    mod, out = compiled(src)
    assert_one_level(out)
    assert_anf(out)
    relay.transform.InferType()(out)
    assert int(relay.evaluate(out, C)) == 6
    assert int(relay.evaluate(out, A(1))) == 7


def test_deterministic_output():
    assert compiled(NESTED)[1].astext() == compiled(NESTED)[1].astext()
