"""The Prelude: loading, names, text round trip, and every function run by the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay import evaluate
from transpile.relay.prelude import PRELUDE_FUNCTIONS, PRELUDE_PATH
from transpile.relay.printer import astext
from transpile.runtime import ADTValue

NIL = ADTValue("Nil")


def i32(value) -> np.ndarray:
    return np.array(value, dtype="int32")


def f32(value) -> np.ndarray:
    return np.array(value, dtype="float32")


def lst(*items) -> ADTValue:
    """A Relay list value; Python ints become int32 scalars."""
    value = NIL
    for item in reversed(items):
        value = ADTValue("Cons", (i32(item) if isinstance(item, int) else item, value))
    return value


def nat(n: int) -> ADTValue:
    value = ADTValue("zero")
    for _ in range(n):
        value = ADTValue("succ", (value,))
    return value


def leaf(v) -> ADTValue:
    return ADTValue("Rose", (i32(v), NIL))


def node(v, *children) -> ADTValue:
    return ADTValue("Rose", (i32(v), lst(*children)))


def run(main_src: str, *args):
    """Evaluates `def @main ...` written against the Prelude."""
    mod = relay.parse('#[version = "0.0.5"]\n' + main_src, init_module=relay.Prelude().mod)
    return evaluate(mod, *args)


# ----- loading -----------------------------------------------------------------------------------


def test_prelude_defines_types_constructors_and_functions():
    p = relay.Prelude()
    assert isinstance(p.mod, relay.IRModule)
    assert (p.l.name_hint, p.cons.name_hint, p.nil.name_hint) == ("List", "Cons", "Nil")
    assert (p.optional.name_hint, p.some.name_hint, p.none.name_hint) == ("Option", "Some", "None")
    assert (p.tree.name_hint, p.rose.name_hint) == ("Tree", "Rose")
    assert (p.nat.name_hint, p.z.name_hint, p.s.name_hint) == ("nat", "zero", "succ")
    assert [len(c.inputs) for c in (p.cons, p.nil, p.some, p.none, p.rose, p.z, p.s)] == [2, 0, 1, 0, 2, 0, 1]
    for name in PRELUDE_FUNCTIONS:
        gv = getattr(p, name)
        assert isinstance(gv, relay.GlobalVar) and gv.name_hint == name
        assert isinstance(p.mod[gv], relay.Function)
    assert p.get_type("List") == (p.l, p.cons, p.nil)
    assert p.get_ctor("Option", "None") is p.none
    assert p.get_global_var("foldr") == p.foldr
    assert p.double == p.nat_double and p.add == p.nat_add
    with pytest.raises(KeyError, match="constructors: Cons, Nil"):
        p.get_ctor("List", "Snoc")


def test_prelude_mutates_the_given_module_in_place():
    mod = relay.IRModule()
    x = relay.var("x", "int32")
    mod["main"] = relay.Function([x], x)
    p = relay.Prelude(mod)
    assert p.mod is mod
    assert "map" in mod and "main" in mod
    assert mod.get_constructor("Cons") is p.cons
    # Loading twice keeps one copy of everything.
    relay.Prelude(mod)
    assert len([gv for gv in mod.functions if gv.name_hint == "map"]) == 1
    # Later parses with the module as initial module see the definitions.
    parsed = relay.parse(
        '#[version = "0.0.5"]\ndef @two(%xs: List[int32]) -> int32 { @length(@tl(%xs)) + 1 }', init_module=mod
    )
    assert "two" in parsed and "length" in parsed


def test_prelude_type_checks_with_tvm_signatures():
    typed = relay.transform.InferType()(relay.Prelude().mod)
    text = {gv.name_hint: relay.printer.type_to_text(func.checked_type) for gv, func in typed.functions.items()}
    assert text["length"] == "fn [A](List[A]) -> int32"
    assert text["nth"] == "fn [A](List[A], int32) -> A"
    assert text["sum"] == "fn (List[int32]) -> int32"
    assert text["size"] == "fn [A](Tree[A]) -> int32"
    assert text["iterate"] == "fn [A](fn (A) -> A, int32) -> fn (A) -> A"
    assert text["nat_iterate"] == "fn [A](fn (A) -> A, nat) -> fn (A) -> A"
    assert text["nat_add"] == "fn (nat, nat) -> nat"


def test_prelude_text_round_trips_through_the_printer():
    mod = relay.Prelude().mod
    printed = mod.astext()  # with /* ty= */ comments where types are known: they parse as comments
    reparsed = relay.parse(printed)
    relay.assert_structural_equal(reparsed, mod)
    assert astext(reparsed, show_types=False) == astext(mod, show_types=False)


def test_prelude_source_is_package_data():
    assert PRELUDE_PATH.name == "prelude.rly" and PRELUDE_PATH.parent.name == "std"
    text = PRELUDE_PATH.read_text()
    assert text.startswith('#[version = "0.0.5"]')
    for name in PRELUDE_FUNCTIONS:
        assert f"def @{name}" in text


# ----- combinators -------------------------------------------------------------------------------


def test_id():
    assert run("def @main(%x: int32) { @id(%x) }", 5) == i32(5)
    got = run("def @main(%x: (int32, float32)) { @id(%x) }", (1, 2.5))
    assert got[0] == i32(1) and got[1] == f32(2.5) and got[1].dtype == np.float32


def test_compose():
    src = """
    def @main(%x: int32) {
      let %inc = fn (%a: int32) -> int32 { %a + 1 };
      let %dbl = fn (%b: int32) -> int32 { %b * 2 };
      (@compose(%inc, %dbl)(%x), @compose(%dbl, %inc)(%x))
    }"""
    assert run(src, 3) == (i32(7), i32(8))


def test_flip():
    src = "def @main() { @flip(fn (%a: int32, %b: int32) -> int32 { %a - %b })(1, 10) }"
    assert run(src) == i32(9)


# ----- lists -------------------------------------------------------------------------------------


def test_hd_and_tl():
    assert run("def @main(%xs: List[int32]) { @hd(%xs) }", lst(1, 2, 3)) == i32(1)
    assert run("def @main(%xs: List[int32]) { @tl(%xs) }", lst(1, 2, 3)) == lst(2, 3)


def test_nth():
    src = "def @main(%xs: List[int32], %n: int32) { @nth(%xs, %n) }"
    assert run(src, lst(10, 20, 30), 0) == i32(10)
    assert run(src, lst(10, 20, 30), 2) == i32(30)


def test_length():
    src = "def @main(%xs: List[float32]) { @length(%xs) }"
    assert run(src, lst(f32(1), f32(2), f32(3))) == i32(3)
    assert run(src, NIL) == i32(0)


def test_update():
    src = "def @main(%xs: List[int32]) { @update(%xs, 1, 9) }"
    assert run(src, lst(1, 2, 3)) == lst(1, 9, 3)


def test_map():
    src = "def @main(%xs: List[int32]) { @map(fn (%x: int32) -> int32 { %x * %x }, %xs) }"
    assert run(src, lst(1, 2, 3)) == lst(1, 4, 9)
    assert run(src, NIL) == NIL


def test_map_changes_the_element_type():
    src = "def @main(%xs: List[int32]) { @map(fn (%x: int32) -> bool { %x > 1 }, %xs) }"
    assert run(src, lst(1, 2)) == lst(np.array(False), np.array(True))


def test_foldl_is_left_associative():
    src = "def @main(%xs: List[int32]) { @foldl(fn (%acc: int32, %x: int32) -> int32 { %acc * 10 + %x }, 0, %xs) }"
    assert run(src, lst(1, 2, 3)) == i32(123)


def test_foldr_is_right_associative():
    src = "def @main(%xs: List[int32]) { @foldr(fn (%x: int32, %acc: int32) -> int32 { %acc * 10 + %x }, 0, %xs) }"
    assert run(src, lst(1, 2, 3)) == i32(321)


def test_foldr1():
    src = "def @main(%xs: List[int32]) { @foldr1(fn (%x: int32, %y: int32) -> int32 { %x - %y }, %xs) }"
    assert run(src, lst(10, 4, 3)) == i32(9)  # 10 - (4 - 3)
    assert run(src, lst(7)) == i32(7)


def test_sum():
    src = "def @main(%xs: List[int32]) { @sum(%xs) }"
    assert run(src, lst(1, 2, 3, 4)) == i32(10)
    assert run(src, NIL) == i32(0)


def test_concat():
    src = "def @main(%xs: List[int32], %ys: List[int32]) { @concat(%xs, %ys) }"
    assert run(src, lst(1, 2), lst(3, 4)) == lst(1, 2, 3, 4)
    assert run(src, NIL, lst(5)) == lst(5)


def test_filter():
    src = "def @main(%xs: List[int32]) { @filter(fn (%x: int32) -> bool { %x > 1 }, %xs) }"
    assert run(src, lst(3, 1, 2, 0)) == lst(3, 2)


def test_zip_stops_at_the_shorter_list():
    src = "def @main(%xs: List[int32], %ys: List[float32]) { @zip(%xs, %ys) }"
    expected = lst((i32(1), f32(4.0)), (i32(2), f32(5.0)))
    assert run(src, lst(1, 2, 3), lst(f32(4.0), f32(5.0))) == expected


def test_rev():
    assert run("def @main(%xs: List[int32]) { @rev(%xs) }", lst(1, 2, 3)) == lst(3, 2, 1)


def test_map_accuml():
    # f(acc, x) = (acc + x, acc * x) from the left: (1,1) -> (2, 1), (2,2) -> (4, 4), (4,3) -> (7, 12);
    # as in TVM's Prelude, each output is consed onto the list built so far.
    src = """
    def @main(%xs: List[int32]) {
      @map_accuml(fn (%acc: int32, %x: int32) -> (int32, int32) { (%acc + %x, %acc * %x) }, 1, %xs)
    }"""
    assert run(src, lst(1, 2, 3)) == (i32(7), lst(12, 4, 1))


def test_map_accumr():
    # From the right: (1,3) -> (4, 3), (4,2) -> (6, 8), (6,1) -> (7, 6).
    src = """
    def @main(%xs: List[int32]) {
      @map_accumr(fn (%acc: int32, %x: int32) -> (int32, int32) { (%acc + %x, %acc * %x) }, 1, %xs)
    }"""
    assert run(src, lst(1, 2, 3)) == (i32(7), lst(6, 8, 3))


COUNTDOWN = """
    fn (%n: int32) -> Option[(int32, int32)] {
      if (%n == 0) { None } else { Some((%n - 1, %n * 10)) }
    }"""


def test_unfoldr():
    assert run(f"def @main(%seed: int32) {{ @unfoldr({COUNTDOWN}, %seed) }}", 3) == lst(30, 20, 10)


def test_unfoldl():
    assert run(f"def @main(%seed: int32) {{ @unfoldl({COUNTDOWN}, %seed) }}", 3) == lst(10, 20, 30)


# ----- trees -------------------------------------------------------------------------------------

TREE = node(1, leaf(2), node(3, leaf(4)))


def test_tmap():
    src = "def @main(%t: Tree[int32]) { @tmap(fn (%x: int32) -> int32 { %x + 10 }, %t) }"
    assert run(src, TREE) == node(11, leaf(12), node(13, leaf(14)))


def test_size():
    src = "def @main(%t: Tree[int32]) { @size(%t) }"
    assert run(src, TREE) == i32(4)
    assert run(src, leaf(5)) == i32(1)


def test_iterate():
    src = "def @main(%n: int32, %x: int32) { @iterate(fn (%y: int32) -> int32 { %y * 2 }, %n)(%x) }"
    assert run(src, 3, 1) == i32(8)
    assert run(src, 0, 5) == i32(5)


# ----- nat ---------------------------------------------------------------------------------------


def test_nat_add():
    assert run("def @main(%a: nat, %b: nat) { @nat_add(%a, %b) }", nat(3), nat(4)) == nat(7)
    assert run("def @main() { @nat_add(succ(succ(zero)), zero) }") == nat(2)


def test_nat_double():
    assert run("def @main(%a: nat) { @nat_double(%a) }", nat(3)) == nat(6)
    assert run("def @main(%a: nat) { @nat_double(%a) }", nat(0)) == nat(0)


def test_nat_nth_and_nat_update():
    assert run("def @main(%xs: List[int32], %n: nat) { @nat_nth(%xs, %n) }", lst(10, 20, 30), nat(1)) == i32(20)
    assert run("def @main(%xs: List[int32], %n: nat) { @nat_update(%xs, %n, 9) }", lst(1, 2, 3), nat(2)) == lst(1, 2, 9)


def test_nat_iterate():
    src = "def @main(%n: nat, %x: int32) { @nat_iterate(fn (%y: int32) -> int32 { %y + 1 }, %n)(%x) }"
    assert run(src, nat(3), 5) == i32(8)
    assert run(src, nat(0), 5) == i32(5)


def test_long_list_functions_do_not_exhaust_the_stack():
    # map and length recurse once per element: 20 000 elements nest 20 000 calls deep.
    n = 20_000
    xs = lst(*range(n))
    got = run("def @main(%xs: List[int32]) { @length(@map(fn (%x: int32) -> int32 { %x + 1 }, %xs)) }", xs)
    assert got == i32(n)
