"""The text printer writes Relay 0.0.5 exactly as TVM's printer did (golden texts)."""

from __future__ import annotations

import base64
import json
import struct

import numpy as np
import pytest

from transpile.relay.attrs import Attrs, MetaRef
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
from transpile.relay.op import registry
from transpile.relay.op.registry import AttrField, OpDef, OpPattern
from transpile.relay.parser import parse_expr
from transpile.relay.printer import astext, astext_node, type_to_text
from transpile.relay.printer import values as printer_values
from transpile.relay.ty import (
    Any,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
    scalar_type,
)

HEADER = '#[version = "0.0.5"]\n'
F32 = scalar_type("float32")
I32 = scalar_type("int32")


def call(name, *args, **attrs):
    """A call of an operator by name, independent of what the registry defines."""
    return Call(Op.get(name), list(args), Attrs(attrs) if attrs else None)


def module(**functions) -> IRModule:
    mod = IRModule()
    for name, func in functions.items():
        mod[name] = func
    return mod


def list_adt():
    a = TypeVar("A")
    list_t = GlobalTypeVar("List")
    data = TypeData(
        list_t, [a], [Constructor("Cons", [a, TypeCall(list_t, [a])], list_t), Constructor("Nil", [], list_t)]
    )
    return list_t, data


# ----- expressions inside functions ---------------------------------------------------------------
def test_graph_bindings_for_every_non_atomic_argument():
    x, y = var("x", shape=(1, 2)), var("y", shape=(1, 2))
    shared = call("add", x, y)
    func = Function([x, y], call("subtract", call("multiply", shared, shared), const(1.5)))
    assert astext(module(main=func)) == HEADER + (
        "def @main(%x: Tensor[(1, 2), float32], %y: Tensor[(1, 2), float32]) {\n"
        "  %0 = add(%x, %y);\n"
        "  %1 = multiply(%0, %0);\n"
        "  subtract(%1, 1.5f)\n"
        "}\n"
    )


def test_let_chain_and_return_type():
    x, a, b = var("x", I32), var("a"), var("b", I32)
    body = Let(a, call("add", x, const(1)), Let(b, call("multiply", a, a), b))
    assert astext(module(main=Function([x], body, I32))) == HEADER + (
        "def @main(%x: int32) -> int32 {\n"
        "  let %a = add(%x, 1);\n"
        "  let %b: int32 = multiply(%a, %a);\n"
        "  %b\n"
        "}\n"
    )


def test_if_binds_its_condition_and_opens_scopes():
    c, x = var("c", "bool"), var("x", F32)
    body = If(call("less", x, const(0.0)), x, call("add", call("negative", x), const(1.0)))
    assert astext(module(f=Function([c, x], body, F32))) == HEADER + (
        "def @f(%c: bool, %x: float32) -> float32 {\n"
        "  %0 = less(%x, 0f);\n"
        "  if (%0) {\n"
        "    %x\n"
        "  } else {\n"
        "    %1 = negative(%x);\n"
        "    add(%1, 1f)\n"
        "  }\n"
        "}\n"
    )


def test_closure_as_let_value_and_as_callee():
    x, y, f = var("x", F32), var("y", F32), var("f")
    body = Let(f, Function([y], call("add", x, y), F32), Call(f, [const(1.0)]))
    assert astext(module(main=Function([x], body))) == HEADER + (
        "def @main(%x: float32) {\n"
        "  let %f = fn (%y: float32) -> float32 {\n"
        "    add(%x, %y)\n"
        "  };\n"
        "  %f(1f)\n"
        "}\n"
    )


def test_function_attributes_and_type_params():
    a = TypeVar("A")
    x = var("x", a)
    func = Function([x], x, a, [a], attrs={"Primitive": 1, "Compiler": "ccompiler"})
    assert astext(module(id=func)) == HEADER + (
        'def @id[A](%x: A, Primitive=1, Compiler="ccompiler") -> A {\n' "  %x\n" "}\n"
    )


def test_expression_printing_matches_tvm_text_printer_tests():
    # The exact outputs asserted by TVM's tests/python/relay/test_ir_text_printer.py.
    y, x = var("y"), var("x")
    nested = Call(Function([x], x), [Call(Function([y], y), [const(1)])])
    assert astext(nested) == HEADER + "%0 = fn (%y) {\n  %y\n};\n%1 = %0(1);\n%2 = fn (%x) {\n  %x\n};\n%2(%1)"
    pair = Tuple([const(0), const(0)])
    v = var("x")
    assert astext(Let(v, pair, pair)) == HEADER + "%0 = (0, 0);\nlet %x = %0;\n%0"
    assert astext(Let(v, Tuple([const(0), const(0)]), v)) == HEADER + "let %x = (0, 0);\n%x"
    assert astext(const(42, "int16")) == HEADER + "42i16"


def test_numbering_follows_tvm_post_order():
    # TVM visited calls in post-order (callee, then arguments left to right) and bound an
    # argument only when its parent was visited: both relu chains' inner nodes come first.
    x = var("x", F32)
    expr = call("add", call("nn.relu", call("nn.relu", x)), call("nn.relu", call("abs", x)))
    assert astext(module(main=Function([x], expr))) == HEADER + (
        "def @main(%x: float32) {\n"
        "  %0 = nn.relu(%x);\n"
        "  %1 = abs(%x);\n"
        "  %2 = nn.relu(%0);\n"
        "  %3 = nn.relu(%1);\n"
        "  add(%2, %3)\n"
        "}\n"
    )
    # A callee closure is printed (with its own bindings) before the arguments are bound.
    y = var("y", F32)
    closure = Function([y], call("negative", call("abs", y)))
    assert astext(module(main=Function([x], Call(closure, [call("add", x, x)])))) == HEADER + (
        "def @main(%x: float32) {\n"
        "  %1 = add(%x, %x);\n"
        "  %2 = fn (%y: float32) {\n"
        "    %0 = abs(%y);\n"
        "    negative(%0)\n"
        "  };\n"
        "  %2(%1)\n"
        "}\n"
    )


def test_free_vars_are_declared_first():
    x, y = var("x", F32), var("y")
    assert astext(call("add", x, y)) == HEADER + "free_var %x: float32;\nfree_var %y;\nadd(%x, %y)"


def test_tuples_and_projections():
    a, b = var("a", I32), var("b", I32)
    t = Tuple([a, b])
    body = Tuple([Tuple([TupleGetItem(t, 1)]), Tuple([]), TupleGetItem(t, 0)])
    assert astext(module(main=Function([a, b], body))) == HEADER + (
        "def @main(%a: int32, %b: int32) {\n"
        "  %0 = (%a, %b);\n"
        "  %1 = %0.1;\n"
        "  %2 = (%1,);\n"
        "  %3 = ();\n"
        "  %4 = %0.0;\n"
        "  (%2, %3, %4)\n"
        "}\n"
    )


def test_references():
    r, u = var("r"), var("u")
    expr = Let(r, RefCreate(const(0)), Let(u, RefWrite(r, const(1)), RefRead(r)))
    assert astext(expr) == HEADER + "let %r = ref(0);\nlet %u = ref_write(%r, 1);\nref_read(%r)"


def test_parenthesized_let_in_argument_position():
    x, y = var("x", F32), var("y")
    inner = Let(y, call("negative", x), y)
    assert astext(module(main=Function([x], call("add", inner, x)))) == HEADER + (
        "def @main(%x: float32) {\n"
        "  %0 = (\n"
        "    let %y = negative(%x);\n"
        "    %y\n"
        "  );\n"
        "  add(%0, %x)\n"
        "}\n"
    )


def test_node_shared_across_branches_is_printed_in_each_scope():
    # TVM would refer to a binding made inside the first branch from the second; we re-print.
    c, x = var("c", "bool"), var("x", F32)
    shared = call("negative", x)
    body = If(c, call("add", shared, shared), call("multiply", shared, x))
    assert astext(module(main=Function([c, x], body))) == HEADER + (
        "def @main(%c: bool, %x: float32) {\n"
        "  if (%c) {\n"
        "    %0 = negative(%x);\n"
        "    add(%0, %0)\n"
        "  } else {\n"
        "    %1 = negative(%x);\n"
        "    multiply(%1, %x)\n"
        "  }\n"
        "}\n"
    )


# ----- ADTs ----------------------------------------------------------------------------------------
def test_type_definition_and_match_with_nested_patterns():
    list_t, data = list_adt()
    cons, nil = data.constructors
    mod = IRModule()
    mod.add_type_data(list_t, data)
    xs = var("xs", TypeCall(list_t, [I32]))
    h, h_again, t = var("h"), var("h"), var("t", TypeCall(list_t, [I32]))
    body = Match(
        xs,
        [
            Clause(
                PatternConstructor(
                    cons, [PatternVar(h), PatternConstructor(cons, [PatternVar(h_again), PatternVar(t)])]
                ),
                call("add", h, h_again),
            ),
            Clause(PatternConstructor(cons, [PatternWildcard(), PatternConstructor(nil)]), const(1)),
            Clause(PatternWildcard(), const(0)),
        ],
        complete=False,
    )
    mod["sum2"] = Function([xs], body, I32)
    b = TypeVar("A")
    z = var("z", b)
    mod["singleton"] = Function([z], Call(cons, [z, Call(nil, [])]), TypeCall(list_t, [b]), [b])
    assert astext(mod) == HEADER + (
        "type List[A] {\n"
        "  Cons(A, List[A]),\n"
        "  Nil,\n"
        "}\n"
        "\n"
        "def @sum2(%xs: List[int32]) -> int32 {\n"
        "  match? (%xs) {\n"
        "    Cons(%h, Cons(%h1, %t: List[int32])) => {\n"
        "      add(%h, %h1)\n"
        "    },\n"
        "    Cons(_, Nil) => {\n"
        "      1\n"
        "    },\n"
        "    _ => {\n"
        "      0\n"
        "    },\n"
        "  }\n"
        "}\n"
        "\n"
        "def @singleton[A](%z: A) -> List[A] {\n"
        "  %0 = Nil;\n"
        "  Cons(%z, %0)\n"
        "}\n"
    )


def test_complete_match_on_tuple_pattern_and_extern_type():
    a, b = var("a"), var("b")
    p = var("p", TupleType([I32, I32]))
    body = Match(p, [Clause(PatternTuple([PatternVar(a), PatternVar(b)]), call("add", a, b))])
    mod = module(main=Function([p], body))
    mod.add_extern_type("Storage")
    assert astext(mod) == HEADER + (
        "extern type Storage\n"
        "\n"
        "def @main(%p: (int32, int32)) {\n"
        "  match (%p) {\n"
        "    (%a, %b) => {\n"
        "      add(%a, %b)\n"
        "    },\n"
        "  }\n"
        "}\n"
    )


# ----- attributes ------------------------------------------------------------------------------------
@pytest.fixture
def fake_conv(monkeypatch):
    """A registered operator with defaults, so attribute elision does not depend on the real registry."""
    registry.registered_ops()  # load the families first so our entry is not clobbered
    opdef = OpDef(
        name="test.conv_like",
        num_inputs=2,
        type_rel=None,
        pattern=OpPattern.OPAQUE,
        numpy_impl=None,
        attrs=[
            AttrField("strides", (1, 1), convert=tuple),
            AttrField("padding", (0, 0, 0, 0), convert=tuple),
            AttrField("channels", None),
            AttrField("kernel_size", None),
            AttrField("data_layout", "NCHW"),
            AttrField("out_dtype", ""),
            AttrField("epsilon", 1e-05),
            AttrField("ceil_mode", False),
        ],
    )
    monkeypatch.setitem(registry._REGISTRY, opdef.name, opdef)
    monkeypatch.setattr(printer_values, "_default_cache", {})
    return opdef


def test_registered_op_prints_only_attributes_that_differ_from_defaults(fake_conv):
    x, w = var("x"), var("w")
    attrs = registry.normalize_attrs(fake_conv, {"channels": 8, "kernel_size": [5, 5], "epsilon": 0.001})
    text = astext(Call(Op.get("test.conv_like"), [x, w], attrs))
    assert text.endswith("test.conv_like(%x, %w, channels=8, kernel_size=[5, 5], epsilon=0.001f)")
    all_default = registry.normalize_attrs(fake_conv, {})
    assert astext(Call(Op.get("test.conv_like"), [x, w], all_default)).endswith("test.conv_like(%x, %w)")
    # An attribute set to a value of another type (1 vs default False) still differs.
    odd = registry.normalize_attrs(fake_conv, {"ceil_mode": True, "strides": [2, 2]})
    assert astext(Call(Op.get("test.conv_like"), [x, w], odd)).endswith(
        "test.conv_like(%x, %w, strides=[2, 2], ceil_mode=True)"
    )


def test_unregistered_op_prints_every_attribute_in_order():
    x = var("x", F32)
    expr = call(
        "test.not_registered",
        x,
        axis=[1, 2],
        eps=1e-05,
        label='a"b\n',
        flag=False,
        missing=None,
        device=MetaRef("VirtualDevice", 1),
        whole=2.0,
    )
    assert astext(expr, show_meta_data=False).splitlines()[2] == (
        'test.not_registered(%x, axis=[1, 2], eps=1e-05f, label="a\\"b\\n", flag=False, missing=None, '
        "device=meta[VirtualDevice][1], whole=2f)"
    )


def test_every_registered_op_with_default_attrs_prints_no_attrs():
    ops = [o for o in registry.registered_ops() if any(f.default is not registry.REQUIRED for f in o.attrs)]
    for opdef in ops:
        if any(f.default is registry.REQUIRED for f in opdef.attrs):
            continue
        if opdef.extras.get("always_print"):
            continue  # attributes TVM's attrs struct gave no default: printed even when unset (below)
        x = var("x")
        args = [x] * (opdef.num_inputs or 1)
        text = astext_node(Call(Op.get(opdef.name), args, registry.normalize_attrs(opdef, {})))
        assert text == f"{opdef.name}({', '.join(['%x'] * len(args))})", opdef.name


def test_attributes_without_a_tvm_default_are_printed_when_unset():
    x = var("x")
    text = astext_node(Call(Op.get("transpose"), [x], registry.normalize_attrs(registry.get("transpose"), {})))
    assert text == "transpose(%x, axes=None)"
    assert parse_expr("free_var %x: Tensor[(2, 3), float32]; transpose(%x, axes=None)").attrs["axes"] is None


# ----- literals and metadata -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, dtype, text",
    [
        (1.0, "float32", "1f"),
        (-1.5, "float32", "-1.5f"),
        (0.1, "float32", "0.1f"),
        (1e-05, "float32", "1e-05f"),
        (1e20, "float32", "1e+20f"),
        (123456789.0, "float32", "1.2345679e+08f"),
        (3, "float16", "3f16"),
        (0.1, "float16", "0.1f16"),
        (3, "float64", "3f64"),
        (0.1, "float64", "0.1f64"),
        (1, "int32", "1"),
        (-7, "int32", "-7"),
        (2, "int64", "2i64"),
        (-42, "int16", "-42i16"),
        (True, "bool", "True"),
        (False, "bool", "False"),
    ],
)
def test_scalar_literals(value, dtype, text):
    assert astext_node(const(value, dtype)) == text


def test_float_literals_read_back_exactly():
    rng = np.random.default_rng(1)
    for dtype, scale in (("float16", 4), ("float32", 30), ("float64", 300)):
        values = (rng.standard_normal(200) * 10.0 ** rng.integers(-scale, scale, 200)).astype(dtype)
        suffix = {"float16": "f16", "float32": "f", "float64": "f64"}[dtype]
        for v in values:
            text = astext_node(const(v, dtype))
            assert text.endswith(suffix)
            assert np.array(float(text[: -len(suffix)]), dtype=dtype).tobytes() == np.array(v, dtype=dtype).tobytes()


def test_non_scalar_and_unusual_constants_go_to_the_meta_table():
    x = var("x", shape=(2, 3))
    weights = const(np.arange(6, dtype="float32").reshape(2, 3))
    odd = const(5, "uint8")
    nan = const(float("nan"))
    text = astext(module(main=Function([x], Tuple([call("add", x, weights), odd, nan, weights]))))
    body, meta = text.split("\n#[metadata]\n")
    assert "%0 = add(%x, meta[relay.Constant][0]);" in body
    assert "(%0, meta[relay.Constant][1], meta[relay.Constant][2], meta[relay.Constant][0])" in body
    table = json.loads(meta)  # TVM's SaveJSON graph: a Map -> Array -> relay.Constant nodes
    root = table["nodes"][table["root"]]
    assert root["type_key"] == "Map" and root["keys"] == ["relay.Constant"]
    constants = [table["nodes"][i] for i in table["nodes"][root["data"][0]]["data"]]
    assert [c["attrs"]["data"] for c in constants] == ["0", "1", "2"]
    records = [base64.b64decode(b) for b in table["b64ndarrays"]]
    # magic, reserved, device (1, 0), ndim, dtype (code, bits, lanes): float32, uint8, float32
    heads = [struct.unpack_from("<QQiiiBBH", r) for r in records]
    assert [h[4:] for h in heads] == [(2, 2, 32, 1), (0, 1, 8, 1), (0, 2, 32, 1)]
    assert struct.unpack_from("<qqq", records[0], 32) == (2, 3, 24)
    np.testing.assert_array_equal(np.frombuffer(records[0][56:], dtype="<f4"), np.arange(6, dtype="float32"))
    assert records[1][-1:] == bytes([5])
    assert np.isnan(np.frombuffer(records[2][-4:], dtype="<f4")[0])


def test_meta_section_omitted_on_request():
    text = astext(const(np.ones(2, "float32")), show_meta_data=False)
    assert text.startswith(HEADER + "meta[relay.Constant][0]\n")
    assert "#[metadata]" not in text and "metadata section has been omitted" in text


# ----- names --------------------------------------------------------------------------------------
def test_distinct_vars_with_one_name_are_disambiguated_per_definition():
    x1, x2, anon, digit = var("x", F32), var("x", F32), var(""), var("0")
    func = Function([x1, x2, anon, digit], Tuple([x1, x2, anon, digit]))
    g = var("x")
    mod = module(main=func, other=Function([g], g))
    assert astext(mod) == HEADER + (
        "def @main(%x: float32, %x1: float32, %v, %v0) {\n"
        "  (%x, %x1, %v, %v0)\n"
        "}\n"
        "\n"
        "def @other(%x) {\n"
        "  %x\n"
        "}\n"
    )


def test_var_bound_again_inside_its_own_scope():
    # Builders reuse Var objects; the inner binding gets a fresh name and the outer one comes back.
    x = var("x", F32)
    inner = Function([x], call("negative", x))
    assert astext(Function([x], Tuple([Call(inner, [x]), x]))) == HEADER + (
        "fn (%x: float32) {\n"
        "  %0 = fn (%x1: float32) {\n"
        "    negative(%x1)\n"
        "  };\n"
        "  %1 = %0(%x);\n"
        "  (%1, %x)\n"
        "}"
    )


def test_type_variables_are_disambiguated_within_their_scope():
    a1, a2 = TypeVar("A"), TypeVar("A")
    x, y = var("x", a1), var("y", a2)
    func = Function([x, y], x, a1, [a1, a2])
    assert astext(module(f=func, g=Function([var("z", a1)], const(0), None, [a1]))) == HEADER + (
        "def @f[A, A1](%x: A, %y: A1) -> A {\n" "  %x\n" "}\n" "\n" "def @g[A](%z: A) {\n" "  0\n" "}\n"
    )


# ----- types ----------------------------------------------------------------------------------------
def test_type_texts():
    a = TypeVar("A")
    list_t = GlobalTypeVar("List")
    assert type_to_text(TensorType((1, 2), "float32")) == "Tensor[(1, 2), float32]"
    assert type_to_text(TensorType((5,), "int8")) == "Tensor[(5), int8]"
    assert type_to_text(TensorType((Any(), 3), "float32")) == "Tensor[(?, 3), float32]"
    assert type_to_text(scalar_type("float16")) == "float16"
    assert type_to_text(TupleType([I32, F32])) == "(int32, float32)"
    assert type_to_text(TupleType([I32])) == "(int32,)"
    assert type_to_text(TupleType([])) == "()"
    assert type_to_text(FuncType([I32], F32)) == "fn (int32) -> float32"
    assert type_to_text(FuncType([a], a, [a])) == "fn [A](A) -> A"
    assert type_to_text(RefType(I32)) == "ref(int32)"
    assert type_to_text(TypeCall(list_t, [a])) == "List[A]"
    assert type_to_text(list_t) == "List"
    assert type_to_text(IncompleteType()) == "_"
    assert repr(TensorType((2,), "bool")) == "Tensor[(2), bool]"


def test_show_types_adds_tvm_style_comments():
    x = var("x", F32)
    add = call("add", x, const(1.0))
    add._set_checked_type(F32)
    neg = call("negative", add)
    neg._set_checked_type(F32)
    x._set_checked_type(F32)
    text = astext(module(main=Function([x], neg)), show_types=True)
    assert text == HEADER + (
        "def @main(%x: float32 /* ty=float32 */) {\n"
        "  %0 = add(%x, 1f) /* ty=float32 */;\n"
        "  negative(%0) /* ty=float32 */\n"
        "}\n"
    )


def test_short_texts_for_repr():
    x = var("x", F32)
    list_t, data = list_adt()
    assert repr(x) == "%x"
    assert repr(GlobalVar("main")) == "@main"
    assert repr(Op.get("nn.relu")) == "nn.relu"
    assert repr(data.constructors[0]) == "Cons"
    assert repr(call("add", x, x)) == "add(%x, %x)"
    assert repr(data) == "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}"
    assert repr(PatternConstructor(data.constructors[0], [PatternWildcard(), PatternVar(var("t"))])) == "Cons(_, %t)"
    assert astext_node(module(main=Function([x], x))) == HEADER + "def @main(%x: float32) {\n  %x\n}\n"


def test_printing_is_reproducible_and_deep_safe():
    x = var("x", F32)
    body = x
    for _ in range(3000):
        body = call("add", body, body)
    mod = module(main=Function([x], body))
    first = astext(mod)
    assert first == astext(mod)
    lines = first.splitlines()
    assert lines[2] == "  %0 = add(%x, %x);"
    assert lines[-2] == "  add(%2998, %2998)"
