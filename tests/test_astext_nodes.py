"""Every Relay node prints itself (`astext`, `str`) as TVM's printer did, and the text parses back."""

from __future__ import annotations

import numpy as np
import pytest

from transpile import relay
from transpile.errors import Span
from transpile.relay.expr import (
    Call,
    Clause,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    TypeData,
    const,
    var,
)
from transpile.relay.module import IRModule
from transpile.relay.printer import astext, pretty_print
from transpile.relay.structural import assert_structural_equal
from transpile.relay.ty import FuncType, GlobalTypeVar, RefType, TensorType, TupleType, TypeCall, TypeVar

HEADER = '#[version = "0.0.5"]\n'

OPTION_SOURCE = HEADER + """
type Option[A] {
  Some(A),
  Nothing,
}
"""


def option_module():
    return relay.parse(OPTION_SOURCE)


def parses_back(expr, mod=None):
    text = expr.astext()
    assert text.startswith(HEADER)
    back = relay.parse_expr(text, init_module=mod)
    assert_structural_equal(back, expr, map_free_vars=True)
    return text


def typed_main(*params_and_body):
    *params, body = params_and_body
    return relay.transform.InferType()(IRModule.from_expr(Function(params, body)))


# ----- every expression kind ----------------------------------------------------------------------
def _expression_kinds():
    x = var("x", "float32")
    pair = Tuple([x, const(2.5)])
    r = var("r")
    cond = var("c", "bool")
    return {
        "var": x,
        "constant": const(7, "int64"),
        "tensor_constant": const(np.arange(6, dtype="float32").reshape(2, 3)),
        "call": relay.add(x, const(1.0)),
        "op": Op.get("nn.relu"),
        "tuple": pair,
        "projection": TupleGetItem(pair, 1),
        "function": Function([x], relay.multiply(x, x)),
        "let": Let(var("y"), relay.negative(x), relay.add(x, x)),
        "if": If(cond, x, relay.negative(x)),
        "ref_create": RefCreate(x),
        "ref_read": RefRead(r),
        "ref_write": Let(r, RefCreate(const(0)), RefWrite(r, const(1))),
    }


@pytest.mark.parametrize("kind", sorted(_expression_kinds()))
def test_each_expression_kind_prints_with_header_and_parses_back(kind):
    expr = _expression_kinds()[kind]
    text = parses_back(expr)
    assert text == astext(expr)


def test_adt_nodes_print_and_parse_back_with_their_module():
    mod = option_module()
    some = mod.get_constructor("Some")
    nothing = mod.get_constructor("Nothing")
    x = var("x", "int32")
    matched = Match(
        some(x),
        [Clause(PatternConstructor(some, [PatternVar(var("v"))]), const(1)), Clause(PatternWildcard(), const(0))],
    )
    partial = Match(Tuple([x, x]), [Clause(PatternTuple([PatternVar(var("a")), PatternWildcard()]), x)], complete=False)
    for expr in (matched, partial, Call(nothing, []), some):
        parses_back(expr, mod)
    assert "match? (" in partial.astext()
    assert some.astext() == HEADER + "Some"  # a constructor as a value: no signature


def test_global_var_and_op_print_as_names():
    assert GlobalVar("f").astext() == HEADER + "@f"
    assert Op.get("nn.softmax").astext() == HEADER + "nn.softmax"
    assert str(GlobalVar("f")) == "@f"


def test_free_variables_are_declared_and_numbered_names_get_a_letter():
    x = var("1")
    text = parses_back(relay.add(x, var("y", "int32")))
    assert text == HEADER + "free_var %v1;\nfree_var %y: int32;\nadd(%v1, %y)"


# ----- types, patterns, type definitions ------------------------------------------------------------
def test_types_print_themselves():
    a = TypeVar("A")
    cases = {
        TensorType((2, 3), "float16"): "Tensor[(2, 3), float16]",
        TensorType((), "bool"): "bool",
        TupleType([TensorType((), "int32")]): "(int32,)",
        FuncType([a], RefType(a), [a]): "fn [A](A) -> ref(A)",
        TypeCall(GlobalTypeVar("Option"), [TensorType((), "int8")]): "Option[int8]",
    }
    for ty, text in cases.items():
        assert ty.astext() == HEADER + text
        assert str(ty) == text


def test_patterns_clauses_and_type_data_print_themselves():
    mod = option_module()
    gtv = mod.get_global_type_var("Option")
    data = mod[gtv]
    assert data.astext() == HEADER + "type Option[A] {\n  Some(A),\n  Nothing,\n}"
    some = mod.get_constructor("Some")
    pattern = PatternConstructor(some, [PatternTuple([PatternVar(var("p")), PatternWildcard()])])
    assert pattern.astext() == HEADER + "Some((%p, _))"
    assert str(pattern) == "Some((%p, _))"
    assert Clause(PatternWildcard(), const(3)).astext() == HEADER + "_ => {\n  3\n}"


def test_type_data_round_trips_through_a_module():
    mod = option_module()
    back = relay.parse(mod.astext())
    assert_structural_equal(back, mod)


# ----- types after inference ------------------------------------------------------------------------
def test_inferred_types_are_shown_on_the_kinds_tvm_annotated():
    x = var("x", TensorType((2,), "float32"))
    pair = Tuple([x, const(1.0)])
    body = Let(var("t"), pair, relay.add(TupleGetItem(pair, 0), const(2.0)))
    mod = typed_main(x, body)
    text = mod.astext()
    assert "%x: Tensor[(2), float32] /* ty=Tensor[(2), float32] */" in text
    assert "(%x, 1f /* ty=float32 */) /* ty=(Tensor[(2), float32], float32) */" in text
    assert ".0 /* ty=Tensor[(2), float32] */" in text
    assert "add(" in text and "2f /* ty=float32 */) /* ty=Tensor[(2), float32] */" in text
    back = relay.parse(text)
    assert_structural_equal(back, mod)
    assert "ty=" not in back.astext()  # comments carry no meaning: the parsed module is untyped


def test_optional_info_repeats_on_a_shared_constant():
    one = const(1)
    mod = typed_main(relay.add(one, one))
    assert mod.astext().count("/* ty=int32 */") == 3
    assert astext(mod, show_types=False).count("ty=") == 0


def test_untyped_nodes_print_no_type_comment():
    x = var("x", "float32")
    assert "/*" not in relay.add(x, x).astext()


# ----- str, repr, metadata --------------------------------------------------------------------------
def test_str_is_the_text_without_header_or_metadata_section():
    x = var("x", "float32")
    weights = const(np.ones((2, 2), "float32"))
    expr = relay.add(x, weights)
    assert str(expr) == "free_var %x: float32;\nadd(%x, meta[relay.Constant][0])"
    assert repr(expr) == "add(%x, meta[relay.Constant][0])"  # repr stays short (error messages use it)
    full = expr.astext()
    assert "#[metadata]" in full and '"b64ndarrays"' in full
    omitted = expr.astext(show_meta_data=False)
    assert "#[metadata]" not in omitted and "metadata section has been omitted" in omitted
    assert relay.IRModule.from_expr(expr).astext(False).endswith(" */")  # positional show_meta_data


def test_str_of_a_typed_module_has_types_and_no_header():
    x = var("x", "float32")
    mod = typed_main(x, relay.add(x, x))
    assert str(mod) == repr(mod) == pretty_print(mod)
    assert str(mod).startswith("def @main(%x: float32 /* ty=float32 */)")
    assert "add(%x, %x) /* ty=float32 */" in str(mod)
    assert mod.astext() == HEADER + str(mod)


# ----- annotate callbacks ---------------------------------------------------------------------------
def test_annotate_replaces_type_comments_and_runs_once_per_node():
    x = var("x", "float32")
    shared = relay.add(x, x)
    mod = typed_main(x, relay.multiply(shared, shared))
    seen = []

    def annotate(node):
        seen.append(node)
        return node.checked_type.dtype if isinstance(node, Call) else ""

    text = mod.astext(annotate=annotate)
    assert "ty=" not in text
    assert "%0 = add(%x, %x) /* float32 */;" in text
    assert "multiply(%0, %0) /* float32 */" in text
    assert len(seen) == len({id(n) for n in seen})
    assert_structural_equal(relay.parse(text), mod)


def test_annotation_text_is_kept_parseable():
    x = var("x", "int32")
    expr = relay.add(x, const(1))
    marked = expr.astext(annotate=lambda n: "/* mine */" if isinstance(n, Call) else None)
    assert marked.endswith("add(%x, 1) /* mine */")
    hostile = expr.astext(annotate=lambda n: "end */ here /* again" if isinstance(n, Call) else "")
    assert "*/ here" not in hostile
    assert_structural_equal(relay.parse_expr(hostile), expr, map_free_vars=True)


def test_annotate_reaches_every_kind_of_node():
    mod = option_module()
    some = mod.get_constructor("Some")
    x = var("x", "int32")
    f = GlobalVar("f")
    body = Match(
        some(Call(f, [x])),
        [Clause(PatternConstructor(some, [PatternVar(var("v"))]), If(const(True), const(1), x))],
    )
    mod[f] = Function([var("a", "int32")], Let(var("b"), RefRead(RefCreate(const(2))), const(3)))
    mod["main"] = Function([x], body)
    text = mod.astext(annotate=lambda n: type(n).__name__)
    for kind in ("Var", "GlobalVar", "Call", "Constant", "Match", "If", "Let", "RefRead", "RefCreate"):
        assert f"/* {kind} */" in text, kind
    assert_structural_equal(relay.parse(text), mod)


# ----- spans ----------------------------------------------------------------------------------------
def test_spans_set_by_a_builder_are_shown_and_parsed_ones_are_not():
    x = var("x", "float32")
    located = Call(Op.get("negative"), [x], span=Span("model.onnx", 4, 2))
    assert located.astext().endswith("negative(%x) /* span=model.onnx:4:2 */")
    parsed = relay.parse(HEADER + "def @main(%x: float32) { negative(%x) }")
    text = parsed.astext()
    assert "span=" not in text
    assert relay.parse(text).astext() == text


# ----- deep programs --------------------------------------------------------------------------------
def test_a_long_typed_chain_prints_and_parses_back():
    x = var("x", TensorType((3,), "float32"))
    body = x
    for _ in range(3000):
        body = relay.add(body, const(1.0))
    mod = typed_main(x, body)
    text = mod.astext()
    assert text.count("/* ty=Tensor[(3), float32] */") == 3000 + 1
    assert_structural_equal(relay.parse(text), mod)


@pytest.mark.parametrize("name", ["base/x", "a/b/c", "a//b", "a/", "/a", "a/*b"])
def test_slash_in_a_local_name_prints_as_tvm_did_and_parses_back(name):
    x = var(name, shape=(2,))
    text = parses_back(Function([x], x))
    if name in ("base/x", "a/b/c"):
        assert "%" + name in text


def test_tvm_span_constructor_order_and_source_name():
    span = relay.Span(relay.SourceName("Add0"), 3, 4, 5, 6)
    assert (span.source_name, span.line, span.end_line, span.column, span.end_column) == ("Add0", 3, 4, 5, 6)
    x = var("x", shape=(2,))
    call = Call(Op.get("negative"), [x], span=span)
    assert "span=Add0:3:5" in astext(Function([x], call))


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_arange_with_a_run_time_bound_prints_parses_and_runs(backend):
    # Its attributes once held the bound expressions themselves: the printer wrote `stop=free_var
    # %x…` (unparseable) and the python backend refused "attribute values of type Var/Constant".
    import transpile

    x = var("x", shape=(), dtype="float32")
    func = Function([x], relay.arange(const(0.0), x, const(1.0)))
    text = parses_back(func)
    assert "free_var" not in text
    mod = IRModule.from_expr(func)
    np.testing.assert_array_equal(transpile.compile(mod, backend=backend)(np.float32(4)), [0, 1, 2, 3])
    static = relay.parse(HEADER + "def @main() { arange(0f, 3f, 1f, start=0f, stop=3f, step=1f) }")
    assert static["main"].body.attrs.stop == 3.0
    np.testing.assert_array_equal(transpile.compile(static, backend=backend)(), [0, 1, 2])
