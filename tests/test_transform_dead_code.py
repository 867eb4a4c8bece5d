"""DeadCodeElimination (unused pure let bindings) and RemoveUnusedFunctions, over the whole language."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay import transform
from transpile.relay.printer import astext

from transform_support import HEADER


def untyped_text(node) -> str:
    """The node's text without the /* ty= */ comments str() shows once types are inferred."""
    return astext(node, show_types=False)


def _dce(src):
    mod = relay.parse(HEADER + src)
    return mod, transform.DeadCodeElimination()(mod)


def _expected(src):
    return transform.InferType()(relay.parse(HEADER + src))["main"]


def test_unused_let_is_removed():
    mod, out = _dce("""
def @main(%x: float32) -> float32 {
  let %unused = %x * 2f;
  %x + 1f
}
""")
    relay.assert_structural_equal(out["main"], _expected("def @main(%x: float32) -> float32 { %x + 1f }"))


def test_a_chain_of_dead_bindings_goes_at_once():
    mod, out = _dce("""
def @main(%x: float32) -> float32 {
  let %a = %x * 2f;
  let %b = %a + 1f;
  let %c = (%a, %b);
  let %keep = %x - 1f;
  %keep
}
""")
    relay.assert_structural_equal(
        out["main"], _expected("def @main(%x: float32) -> float32 { let %keep = %x - 1f; %keep }")
    )


def test_used_bindings_stay_and_nested_dead_code_goes():
    mod, out = _dce("""
type Option[A] { Some(A), None }
def @main(%x: float32, %flag: bool) -> float32 {
  let %f = fn (%y: float32) -> float32 { let %dead = %y * %y; %y + %x };
  let %z = if (%flag) { let %d2 = exp(%x); %f(%x) } else { %x };
  match (Some(%z)) {
    Some(%v) => { let %d3 = %v * 3f; %v },
    None => %x,
  }
}
""")
    text = untyped_text(out["main"])
    assert "%dead" not in text and "%d2" not in text and "%d3" not in text
    assert "let %f" in text and "let %z" in text


def test_effects_are_kept():
    src = """
def @side(%r: ref(float32)) -> float32 { ref_write(%r, 9f); 0f }
def @main(%r: ref(float32)) -> float32 {
  let %w = ref_write(%r, 2f);
  let %c = @side(%r);
  let %closure = fn () -> float32 { 1f };
  let %call = %closure();
  let %read = ref_read(%r);
  let %fresh = ref(3f);
  1f
}
"""
    mod, out = _dce(src)
    text = untyped_text(out["main"])
    assert "ref_write(%r, 2f)" in text and "@side(%r)" in text and "%closure()" in text
    assert "%read" not in text and "%fresh" not in text
    with_impure = transform.DeadCodeElimination(ignore_impurity=True)(relay.parse(HEADER + src))
    assert "ref_write" not in untyped_text(with_impure["main"])


def test_recursion_and_polymorphism():
    mod, out = _dce("""
def @count[A](%xs: List[A], %n: int32) -> int32 {
  let %unused = %n + 1;
  match (%xs) {
    Cons(_, %rest) => @count(%rest, %n + 1),
    Nil => %n,
  }
}
def @main(%xs: List[float32]) -> int32 { @count(%xs, 0) }
""".replace("def @count", "type List[A] { Cons(A, List[A]), Nil }\ndef @count"))
    assert "%unused" not in untyped_text(out["count"])
    xs = relay.evaluate(out, _list(out, [1.0, 2.0, 3.0]))
    assert int(xs) == 3


def _list(mod, values):
    from transpile.runtime import ADTValue

    out = ADTValue("Nil", ())
    for v in reversed(values):
        out = ADTValue("Cons", (np.float32(v), out))
    return out


def test_shared_values_are_released_once():
    # %a feeds two dead bindings and a live one: it must stay.
    mod, out = _dce("""
def @main(%x: float32) -> float32 {
  let %a = %x * 2f;
  let %d1 = %a + 1f;
  let %d2 = %a + 2f;
  %a - 1f
}
""")
    text = untyped_text(out["main"])
    assert "let %a" in text and "%d1" not in text and "%d2" not in text


def test_inline_once_is_not_supported():
    with pytest.raises(NotImplementedError):
        transform.DeadCodeElimination(inline_once=True)


def test_remove_unused_functions():
    mod = relay.parse(HEADER + """
def @helper(%x: float32) -> float32 { %x * 2f }
def @orphan(%x: float32) -> float32 { %x * 3f }
def @lonely_caller(%x: float32) -> float32 { @orphan(%x) }
def @main(%x: float32) -> float32 { @helper(%x) }
""")
    out = transform.RemoveUnusedFunctions()(mod)
    assert sorted(gv.name_hint for gv in out.get_global_vars()) == ["helper", "main"]
    kept = transform.RemoveUnusedFunctions(["main", "lonely_caller"])(mod)
    assert sorted(gv.name_hint for gv in kept.get_global_vars()) == ["helper", "lonely_caller", "main", "orphan"]
