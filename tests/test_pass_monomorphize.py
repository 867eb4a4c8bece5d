"""monomorphize: specializations per instantiation, names, reachability, re-typing, semantics."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay.printer import astext
from transpile.errors import TranspileError
from transpile.passes import monomorphize
from transpile.relay import expr as E
from transpile.relay.ty import FuncType, RefType, TupleType, TypeCall, TypeVar
from transpile.relay.visitor import ExprVisitor
from transpile.runtime import ADTValue as V

HEADER = '#[version = "0.0.5"]\n'


def typed(src: str, prelude: bool = False):
    init = None
    if prelude:
        init = relay.IRModule()
        relay.Prelude(init)
    return relay.transform.InferType()(relay.parse(HEADER + src, init_module=init))


def has_type_var(ty) -> bool:
    if isinstance(ty, TypeVar):
        return True
    if isinstance(ty, TupleType):
        return any(has_type_var(f) for f in ty.fields)
    if isinstance(ty, FuncType):
        return bool(ty.type_params) or any(has_type_var(a) for a in (*ty.arg_types, ty.ret_type))
    if isinstance(ty, TypeCall):
        return any(has_type_var(a) for a in ty.args)
    if isinstance(ty, RefType):
        return has_type_var(ty.value)
    return False


class _TypeVarFinder(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.bad = []

    def visit(self, expr):
        if not isinstance(expr, (E.Op, E.Constructor)):
            ty = getattr(expr, "checked_type_", None)
            if ty is not None and has_type_var(ty):
                self.bad.append(expr)
        return super().visit(expr)

    def visit_function(self, f):
        if f.type_params:
            self.bad.append(f)
        super().visit_function(f)


def assert_monomorphic(mod):
    """Re-type-checks `mod` and finds no type variable in any checked type."""
    retyped = relay.transform.InferType()(mod)
    for gv, func in retyped.functions.items():
        assert not func.type_params, gv.name_hint
        finder = _TypeVarFinder()
        finder.visit(func)
        assert not finder.bad, f"@{gv.name_hint}: {finder.bad[:3]}"
    return retyped


def lst(*items, dtype="int32"):
    v = V("Nil", ())
    for x in reversed(items):
        v = V("Cons", (np.asarray(x, dtype=dtype), v))
    return v


def test_polymorphic_id_at_two_types():
    mod = typed("""
def @id[A](%x: A) -> A { %x }
def @unused[A](%x: A) -> A { %x }
def @main(%a: int32, %b: float32) -> (int32, float32) { (@id(%a), @id(%b)) }
""")
    out = monomorphize(mod)
    assert [gv.name_hint for gv in out.functions] == ["main", "id__int32", "id__float32"]
    assert astext(out, show_types=False) == astext(relay.parse(HEADER + """
def @main(%a: int32, %b: float32) -> (int32, float32) { (@id__int32(%a), @id__float32(%b)) }
def @id__int32(%x: int32) -> int32 { %x }
def @id__float32(%x: float32) -> float32 { %x }
"""), show_types=False)
    assert_monomorphic(out)
    got = relay.evaluate(out, 3, 1.5)
    assert int(got[0]) == 3 and float(got[1]) == 1.5


def test_prelude_map_and_foldl_specializations():
    mod = typed(
        """
def @main(%xs: List[int32]) -> (List[float32], int32, float32) {
  let %half = fn (%x: int32) -> float32 { divide(cast(%x, dtype="float32"), 2f) };
  let %fadd = fn (%acc: float32, %v: float32) -> float32 { add(%acc, %v) };
  %0 = @map(%half, %xs);
  (%0, @sum(%xs), @foldl(%fadd, 0f, %0))
}
""",
        prelude=True,
    )
    out = monomorphize(mod)
    names = [gv.name_hint for gv in out.functions]
    assert names[0] == "main"
    assert set(names) == {"main", "map__int32__float32", "sum", "foldl__int32__int32", "foldl__float32__float32"}
    assert_monomorphic(out)
    xs = lst(1, 2, 3)
    want_map = lst(0.5, 1.0, 1.5, dtype="float32")
    for m in (mod, out):
        mapped, total, ftotal = relay.evaluate(m, xs)
        assert mapped == want_map
        assert int(total) == 6 and float(ftotal) == 3.0


def test_polymorphic_global_used_as_a_value_and_returned():
    mod = typed(
        """
def @main(%xs: List[int32], %n: int32) -> (List[int32], int32, Tree[int32]) {
  let %inc = fn (%v: int32) -> int32 { add(%v, 1) };
  let %g = @iterate(%inc, %n);
  (@map(@id, %xs), %g(10), @tmap(@id, Rose(1, Nil)))
}
""",
        prelude=True,
    )
    out = monomorphize(mod)
    names = {gv.name_hint for gv in out.functions}
    assert {"iterate__int32", "id__int32", "compose__int32__int32__int32", "map__int32__int32"} <= names
    assert "tmap__int32__int32" in names and "map__Tree_int32__Tree_int32" in names
    assert_monomorphic(out)
    for m in (mod, out):
        mapped, iterated, tree = relay.evaluate(m, lst(4, 5), 3)
        assert mapped == lst(4, 5)
        assert int(iterated) == 13
        assert tree == V("Rose", (np.int32(1), V("Nil", ())))


def test_let_bound_polymorphic_function_is_specialized_per_use():
    mod = typed("""
def @main(%a: int32, %b: bool) -> (int32, bool, (int32, bool)) {
  let %ident = fn [A](%y: A) -> A { %y };
  let %unused = fn [B](%z: B) -> B { %z };
  let %pair = fn [P, Q](%p: P, %q: Q) -> (P, Q) { (%ident(%p), %ident(%q)) };
  (%ident(%a), %ident(%b), %pair(%a, %b))
}
""")
    out = monomorphize(mod)
    text = astext(out, show_types=False)
    assert "%ident__int32 = fn (%y: int32) -> int32" in text
    assert "%ident__bool = fn (%y1: bool) -> bool" in text or "%ident__bool = fn (%y" in text
    assert "%pair__int32__bool = fn" in text
    assert "unused" not in text
    assert_monomorphic(out)
    got = relay.evaluate(out, 7, True)
    assert int(got[0]) == 7 and bool(got[1]) is True and int(got[2][0]) == 7 and bool(got[2][1])


def test_local_polymorphic_recursion_at_another_type_is_rejected():
    mod = typed("""
def @main(%a: int32) -> int32 {
  let %f = fn [A](%y: A, %n: int32) -> A {
    if (equal(%n, 0)) { %y } else { %f((%y, %y), subtract(%n, 1)).0 }
  };
  %f(%a, 2)
}
""")
    with pytest.raises(TranspileError, match="local function %f calls itself at other types"):
        monomorphize(mod)


def test_unbounded_polymorphic_recursion_raises():
    mod = typed("""
def @grow[A](%x: A, %n: int32) -> int32 {
  if (equal(%n, 0)) { 0 } else { @grow((%x, %x), subtract(%n, 1)) }
}
def @main(%a: int32) -> int32 { @grow(%a, 3) }
""")
    with pytest.raises(TranspileError, match="polymorphic recursion"):
        monomorphize(mod)


def test_bounded_polymorphic_recursion_terminates():
    mod = typed("""
def @f[A](%x: A, %n: int32) -> int32 { if (equal(%n, 0)) { 0 } else { @g(%x, %n) } }
def @g[B](%x: B, %n: int32) -> int32 { @f(%x, subtract(%n, 1)) }
def @main(%a: int32, %b: float32) -> int32 { add(@f(%a, 3), @g(%b, 2)) }
""")
    out = monomorphize(mod)
    assert [gv.name_hint for gv in out.functions] == ["main", "f__int32", "g__float32", "g__int32", "f__float32"]
    assert_monomorphic(out)
    assert int(relay.evaluate(out, 1, 2.0)) == 0


def test_name_collisions_get_suffixes_and_entry_must_be_monomorphic():
    mod = typed("""
def @id[A](%x: A) -> A { %x }
def @id__int32(%x: float32) -> float32 { %x }
def @main(%a: int32, %b: float32) -> (int32, float32) { (@id(%a), @id__int32(%b)) }
""")
    out = monomorphize(mod)
    assert {gv.name_hint for gv in out.functions} == {"main", "id__int32_1", "id__int32"}
    assert_monomorphic(out)
    assert int(relay.evaluate(out, 2, 1.0)[0]) == 2
    with pytest.raises(TranspileError, match="entry function @id is polymorphic"):
        monomorphize(mod, entry="id")
    with pytest.raises(TranspileError, match="no function @nope"):
        monomorphize(mod, entry="nope")


def test_type_names_for_structured_types():
    from transpile.passes.monomorphize import type_name

    assert type_name(relay.TensorType((2, 3), "float32")) == "float32_2x3"
    assert type_name(relay.TensorType((relay.Any(), 4), "int8")) == "int8_anyx4"
    assert type_name(relay.TupleType([])) == "unit"
    assert type_name(relay.FuncType([relay.scalar_type("int32")], relay.scalar_type("bool"))) == "fn_int32_to_bool"
    assert type_name(relay.RefType(relay.scalar_type("int32"))) == "ref_int32"


def test_refs_tuples_and_adts_in_specialized_bodies():
    mod = typed(
        """
def @swap_ref[A](%r: ref(A), %v: A) -> A {
  let %old = ref_read(%r);
  ref_write(%r, %v);
  %old
}
def @first[A, B](%p: (A, B)) -> A { %p.0 }
def @wrap[A](%x: A) -> Option[A] { Some(%x) }
def @main(%x: int32) -> (int32, int32, Option[float32]) {
  let %r = ref(%x);
  let %o = @swap_ref(%r, 5);
  (%o, @first((ref_read(%r), 1f)), @wrap(2f))
}
""",
        prelude=True,
    )
    out = monomorphize(mod)
    assert "swap_ref__int32" in {gv.name_hint for gv in out.functions}
    assert "first__int32__float32" in {gv.name_hint for gv in out.functions}
    assert_monomorphic(out)
    got = relay.evaluate(out, 3)
    assert int(got[0]) == 3 and int(got[1]) == 5
    assert got[2] == V("Some", (np.float32(2),))


def test_deterministic_output():
    src = """
def @main(%xs: List[int32]) -> (List[int32], int32) { (@rev(%xs), @length(@zip(%xs, %xs))) }
"""
    assert monomorphize(typed(src, True)).astext() == monomorphize(typed(src, True)).astext()
