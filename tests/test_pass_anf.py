"""to_anf: exact output shape, typing, sharing evaluated once, evaluation order, deep chains."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.relay.printer import astext
from transpile.passes import to_anf, to_anf_expr
from transpile.passes.anf import ATOM_TYPES
from transpile.relay import expr as E
from transpile.runtime import ADTValue

HEADER = '#[version = "0.0.5"]\n'


def typed(src: str, init=None):
    return relay.transform.InferType()(relay.parse(HEADER + src, init_module=init))


def assert_anf(mod):
    """Every function body is a let chain of values over atoms ending in an atom."""
    for gv, func in mod.functions.items():
        _check_function(func, gv.name_hint)


def _check_function(func, where):
    _check_body(func.body, where)


def _check_body(body, where):
    while isinstance(body, E.Let):
        assert not isinstance(body.value, ATOM_TYPES), f"{where}: an atom is let-bound: %{body.var.name_hint}"
        _check_value(body.value, where)
        assert getattr(body, "checked_type_", None) is not None, f"{where}: untyped let"
        assert getattr(body.var, "checked_type_", None) is not None, f"{where}: untyped var"
        body = body.body
    assert isinstance(body, ATOM_TYPES) and not isinstance(body, E.Op), f"{where}: body ends in {type(body).__name__}"


def _atom(x, where):
    assert isinstance(x, ATOM_TYPES) and not isinstance(x, E.Op), f"{where}: {type(x).__name__} is not an atom"


def _check_value(v, where):
    assert getattr(v, "checked_type_", None) is not None, f"{where}: untyped {type(v).__name__}"
    if isinstance(v, E.Call):
        assert isinstance(v.op, (E.Op, E.GlobalVar, E.Var, E.Constructor)), f"{where}: callee {type(v.op).__name__}"
        for a in v.args:
            _atom(a, where)
    elif isinstance(v, E.Tuple):
        for f in v.fields:
            _atom(f, where)
    elif isinstance(v, E.TupleGetItem):
        _atom(v.tuple_value, where)
    elif isinstance(v, E.If):
        _atom(v.cond, where)
        _check_body(v.true_branch, where)
        _check_body(v.false_branch, where)
    elif isinstance(v, E.Match):
        _atom(v.data, where)
        for c in v.clauses:
            _check_body(c.rhs, where)
    elif isinstance(v, E.Function):
        _check_body(v.body, where)
    elif isinstance(v, E.RefCreate):
        _atom(v.value, where)
    elif isinstance(v, E.RefRead):
        _atom(v.ref, where)
    elif isinstance(v, E.RefWrite):
        _atom(v.ref, where)
        _atom(v.value, where)
    else:
        raise AssertionError(f"{where}: unexpected value {type(v).__name__}")


def test_graph_bindings_become_one_let_each_and_user_lets_keep_their_names():
    mod = typed("""
def @main(%x: int32, %c: bool) -> int32 {
  %0 = add(%x, 1);
  %1 = multiply(%0, %0);
  let %y = %1;
  let %z = %y;
  %2 = if (%c) { add(%1, 2) } else { %3 = subtract(%x, 5); multiply(%3, %3) };
  add(%2, %z)
}
""")
    out = to_anf(mod)
    expected = typed("""
def @main(%x: int32, %c: bool) -> int32 {
  let %t0 = add(%x, 1);
  let %y = multiply(%t0, %t0);
  let %t4 = if (%c) {
    let %t1 = add(%y, 2);
    %t1
  } else {
    let %t2 = subtract(%x, 5);
    let %t3 = multiply(%t2, %t2);
    %t3
  };
  let %t5 = add(%t4, %y);
  %t5
}
""")
    relay.assert_structural_equal(out["main"], expected["main"])
    text = astext(out, show_types=False)
    assert "let %t0 = add(%x, 1);" in text and "let %y = multiply(%t0, %t0);" in text
    assert_anf(out)
    relay.transform.InferType()(out)
    for x, c, want in [(3, True, 34), (3, False, 20), (-1, True, 2)]:
        assert int(relay.evaluate(out, x, c)) == want
        assert int(relay.evaluate(mod, x, c)) == want


def test_output_is_typed_without_inference_and_retypechecks():
    mod = typed("""
def @main(%x: Tensor[(2, 3), float32]) -> (Tensor[(3,), float32], float32) {
  %0 = nn.relu(%x);
  %1 = sum(%0, axis=[0]);
  (%1, sum(%1))
}
""")
    out = to_anf(mod)
    assert_anf(out)
    body = out["main"].body
    types = []
    while isinstance(body, E.Let):
        types.append(body.var.checked_type_)
        body = body.body
    assert types == [
        relay.TensorType((2, 3), "float32"),
        relay.TensorType((3,), "float32"),
        relay.TensorType((), "float32"),
        relay.TupleType([relay.TensorType((3,), "float32"), relay.TensorType((), "float32")]),
    ]
    retyped = relay.transform.InferType()(out)
    assert retyped["main"].checked_type == mod["main"].checked_type
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2
    got = relay.evaluate(out, x)
    np.testing.assert_allclose(got[0], np.maximum(x, 0).sum(0))
    np.testing.assert_allclose(got[1], np.maximum(x, 0).sum())


def test_shared_effect_is_evaluated_once():
    src = """
def @main(%n: int32) -> int32 {
  %9 = ref(%n);
  %0 = ref_write(%9, add(ref_read(%9), 1));
  let %a = (%0, %0, %0);
  ref_read(%9)
}
"""
    mod = typed(src)
    out = to_anf(mod)
    assert_anf(out)
    assert out.astext().count("ref_write(") == 1
    assert int(relay.evaluate(out, 5)) == 6
    assert int(relay.evaluate(mod, 5)) == 6


def test_evaluation_order_left_to_right_with_refs():
    # Each argument bumps the counter and returns its value: left-to-right gives (1, 2, 3).
    src = """
def @main() -> (int32, int32, int32) {
  let %r = ref(0);
  let %tick = fn () -> int32 {
    ref_write(%r, add(ref_read(%r), 1));
    ref_read(%r)
  };
  (%tick(), multiply(%tick(), 1), %tick())
}
"""
    mod = typed(src)
    out = to_anf(mod)
    assert_anf(out)
    got = relay.evaluate(out)
    assert [int(v) for v in got] == [1, 2, 3]


def test_shared_node_in_sibling_branches_is_not_hoisted():
    # @hd(%xs) is shared by two branches of a match; hoisting it before the match would fail on Nil.
    prelude = relay.IRModule()
    relay.Prelude(prelude)
    src = """
def @main(%xs: List[int32], %c: bool) -> int32 {
  %0 = @hd(%xs);
  match (%xs) {
    Nil => 0,
    Cons(_, Nil) => %0,
    _ => add(%0, 100),
  }
}
"""
    mod = typed(src, prelude)
    out = to_anf(mod)
    assert_anf(out)
    main_text = out["main"].body
    assert isinstance(main_text, E.Let) and isinstance(main_text.value, E.Match)
    nil = ADTValue("Nil", ())
    one = ADTValue("Cons", (np.int32(4), nil))
    two = ADTValue("Cons", (np.int32(4), one))
    assert int(relay.evaluate(out, nil, True)) == 0
    assert int(relay.evaluate(out, one, True)) == 4
    assert int(relay.evaluate(out, two, True)) == 104


def test_shared_effect_in_both_branches_runs_once_per_path():
    src = """
def @main(%c: bool) -> int32 {
  %9 = ref(0);
  %0 = ref_write(%9, add(ref_read(%9), 1));
  %1 = if (%c) { (%0, %0, 1).2 } else { (%0, 2).1 };
  add(multiply(%1, 10), ref_read(%9))
}
"""
    mod = typed(src)
    out = to_anf(mod)
    assert_anf(out)
    assert out.astext().count("ref_write(") == 2  # one binding per branch, none before the if
    branch = out["main"].body.body.value
    assert isinstance(branch, E.If)
    assert int(relay.evaluate(out, True)) == 11
    assert int(relay.evaluate(out, False)) == 21
    assert int(relay.evaluate(mod, True)) == 11


def test_shared_node_used_before_and_inside_a_branch_is_bound_once_outside():
    src = """
def @main(%x: int32, %c: bool) -> int32 {
  %0 = multiply(%x, %x);
  %1 = if (%c) { add(%0, 1) } else { 0 };
  add(%1, %0)
}
"""
    out = to_anf(typed(src))
    assert_anf(out)
    assert out.astext().count("multiply(") == 1
    body = out["main"].body
    assert isinstance(body.value, E.Call) and body.value.op.name == "multiply"
    assert int(relay.evaluate(out, 3, True)) == 19
    assert int(relay.evaluate(out, 3, False)) == 9


def test_node_shared_only_inside_a_function_stays_inside_it():
    src = """
def @main(%x: int32) -> int32 {
  let %f = fn (%y: int32) -> int32 {
    %0 = add(%y, %x);
    multiply(%0, %0)
  };
  %f(2)
}
"""
    out = to_anf(typed(src))
    assert_anf(out)
    f = out["main"].body.value
    assert isinstance(f, E.Function)
    assert isinstance(f.body.value, E.Call) and f.body.value.op.name == "add"
    assert int(relay.evaluate(out, 1)) == 9


def test_nested_calls_function_callee_and_tuples():
    src = """
def @main(%x: int32) -> int32 {
  %0 = (fn (%a: int32) -> int32 { add(%a, 1) })(%x);
  %1 = (%0, (%x, 2));
  add(%1.1.1, %1.0)
}
"""
    mod = typed(src)
    out = to_anf(mod)
    assert_anf(out)
    assert int(relay.evaluate(out, 5)) == 8


def test_match_and_prelude_functions_convert_and_agree():
    prelude = relay.IRModule()
    relay.Prelude(prelude)
    src = """
def @main(%xs: List[int32]) -> (int32, List[int32], int32) {
  (@sum(@map(fn (%v: int32) -> int32 { multiply(%v, 2) }, %xs)), @rev(%xs), @length(@zip(%xs, %xs)))
}
"""
    mod = typed(src, prelude)
    out = to_anf(mod)
    assert_anf(out)
    relay.transform.InferType()(out)
    xs = ADTValue("Cons", (np.int32(1), ADTValue("Cons", (np.int32(2), ADTValue("Nil", ())))))
    total, rev, length = relay.evaluate(out, xs)
    assert int(total) == 6 and int(length) == 2
    assert rev == ADTValue("Cons", (np.int32(2), ADTValue("Cons", (np.int32(1), ADTValue("Nil", ())))))


def test_to_anf_expr_on_expressions():
    x = relay.var("x", "int32")
    y = x + relay.const(1)
    expr = relay.Function([x], relay.Tuple([y * y, y]))
    relay.infer_type_expr(expr)
    out = to_anf_expr(expr)
    assert isinstance(out, E.Function)
    _check_function(out, "expr")
    adds = []
    body = out.body
    while isinstance(body, E.Let):
        if isinstance(body.value, E.Call) and body.value.op.name == "add":
            adds.append(body.var)
        body = body.body
    assert len(adds) == 1
    got = relay.evaluate(out, 3)
    assert [int(v) for v in got] == [16, 4]


def test_deep_chain_of_2000_graph_bindings():
    n = 2000
    lines = ["def @main(%x: float32) -> float32 {", "  %0 = add(%x, 1f);"]
    for i in range(1, n):
        lines.append(f"  %{i} = add(%{i - 1}, 1f);")
    lines.append(f"  %{n - 1}")
    lines.append("}")
    mod = typed("\n".join(lines))
    out = to_anf(mod)
    depth = 0
    body = out["main"].body
    while isinstance(body, E.Let):
        depth += 1
        body = body.body
    assert depth == n
    assert float(relay.evaluate(out, 0.5)) == pytest.approx(n + 0.5)


def test_deep_nested_lets_stay_flat():
    n = 3000
    lines = ["def @main(%x: int32) -> int32 {"]
    prev = "%x"
    for i in range(n):
        lines.append(f"  let %v{i} = add({prev}, 1);")
        prev = f"%v{i}"
    lines.append(f"  {prev}")
    lines.append("}")
    out = to_anf(typed("\n".join(lines)))
    body = out["main"].body
    names = []
    while isinstance(body, E.Let):
        names.append(body.var.name_hint)
        body = body.body
    assert names == [f"v{i}" for i in range(n)]
    assert int(relay.evaluate(out, 1)) == n + 1


def test_deterministic_output():
    src = """
def @main(%x: int32) -> int32 {
  %0 = add(%x, 1);
  %1 = (%0, %0);
  add(%1.0, %1.1)
}
"""
    assert to_anf(typed(src)).astext() == to_anf(typed(src)).astext()


# ----- the real corpus -------------------------------------------------------------------------
from corpus_support import load, records  # noqa: E402

from transpile.errors import TranspileError  # noqa: E402
from transpile.passes import compile_matches, monomorphize  # noqa: E402
from transpile.relay.op.registry import lookup  # noqa: E402


def _typed_corpus_module(record):
    from test_corpus_typecheck import operators_of

    try:
        mod = load(record)
    except LookupError as why:
        pytest.skip(str(why))
    if any(lookup(name) is None for name in operators_of(mod)):
        pytest.skip("uses operators outside the registry")
    if not mod.functions:
        pytest.skip("no functions")
    try:
        return relay.transform.InferType()(mod)
    except TranspileError as why:
        pytest.skip(f"does not type-check here: {why}")


@pytest.mark.parametrize("record", records("module", "ok"), ids=lambda r: r["file"])
def test_corpus_modules_go_through_monomorphize_anf_and_match_compilation(record):
    mod = _typed_corpus_module(record)
    entry = "main" if "main" in mod else next(iter(mod.functions)).name_hint
    if mod[entry].type_params:
        with pytest.raises(TranspileError, match="is polymorphic"):
            monomorphize(mod, entry)
        mono = mod
    else:
        mono = monomorphize(mod, entry)
        if any(f is not mod.functions.get(gv) for gv, f in mono.functions.items()):
            relay.transform.InferType()(mono)
    anf = to_anf(mono)
    assert_anf(anf)
    retyped = relay.transform.InferType()(anf)
    for gv, func in retyped.functions.items():
        assert func.checked_type == mono[gv.name_hint].checked_type or relay.structural_equal(
            func.checked_type, mono[gv.name_hint].checked_type
        ), gv.name_hint
    compiled = compile_matches(anf)
    assert_anf(compiled)


def test_mnist_gives_identical_results_after_the_passes():
    record = next(r for r in records("module", "ok") if r["file"] == "menangerie__1.relay")
    mod = _typed_corpus_module(record)
    out = compile_matches(to_anf(monomorphize(mod)))
    params = mod["main"].params
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.checked_type.concrete_shape).astype(p.checked_type.dtype) for p in params]
    want = relay.evaluate(mod, *args)
    got = relay.evaluate(out, *args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
