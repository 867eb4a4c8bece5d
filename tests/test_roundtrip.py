"""print -> parse gives back a structurally equal program: hand-built programs and the whole corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest

from transpile.relay.attrs import Attrs, MetaRef
from transpile.relay.expr import (
    Call,
    Clause,
    Constant,
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
from transpile.relay.parser import parse, parse_expr
from transpile.relay.printer import astext
from transpile.relay.structural import assert_structural_equal
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

from corpus_support import CORPUS, init_module_or_stand_in, meta_table, records

F32 = scalar_type("float32")
I32 = scalar_type("int32")


def call(name, *args, **attrs):
    return Call(Op.get(name), list(args), Attrs(attrs) if attrs else None)


def roundtrip_module(mod):
    text = astext(mod)
    back = parse(text)
    assert_structural_equal(mod, back)
    assert astext(back) == text  # printing is a fixed point after one round
    return back


def roundtrip_expr(expr):
    text = astext(expr)
    back = parse_expr(text)
    assert_structural_equal(expr, back, map_free_vars=True)
    return back


# ----- hand-built programs -----------------------------------------------------------------------
def list_module():
    mod = IRModule()
    a = TypeVar("A")
    list_t = GlobalTypeVar("List")
    data = TypeData(
        list_t, [a], [Constructor("Cons", [a, TypeCall(list_t, [a])], list_t), Constructor("Nil", [], list_t)]
    )
    mod.add_type_data(list_t, data)
    cons, nil = data.constructors
    # def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B]
    ta, tb = TypeVar("A"), TypeVar("B")
    f = var("f", FuncType([ta], tb))
    xs = var("xs", TypeCall(list_t, [ta]))
    h, t = var("h"), var("t")
    body = Match(
        xs,
        [
            Clause(
                PatternConstructor(cons, [PatternVar(h), PatternVar(t)]),
                Call(cons, [Call(f, [h]), Call(GlobalVar("map"), [f, t])]),
            ),
            Clause(PatternConstructor(nil), Call(nil, [])),
        ],
    )
    mod["map"] = Function([f, xs], body, TypeCall(list_t, [tb]), [ta, tb])
    # def @second(%xs: List[int32]) -> int32: nested patterns, typed pattern variable, match?
    ys = var("ys", TypeCall(list_t, [I32]))
    x1, x2 = var("x"), var("x", I32)
    body = Match(
        ys,
        [
            Clause(
                PatternConstructor(
                    cons, [PatternWildcard(), PatternConstructor(cons, [PatternVar(x2), PatternWildcard()])]
                ),
                x2,
            ),
            Clause(PatternConstructor(cons, [PatternVar(x1), PatternConstructor(nil)]), x1),
        ],
        complete=False,
    )
    mod["second"] = Function([ys], body, I32)
    return mod


def test_adts_polymorphism_and_patterns():
    roundtrip_module(list_module())


def test_closures_lets_ifs_refs_and_tuples():
    x, y, f, r, u, p = var("x", F32), var("y", F32), var("f"), var("r", RefType(F32)), var("u"), var("p")
    a, b = var("a"), var("b")
    closure = Function([y], call("add", x, y), F32)
    body = Let(
        f,
        closure,
        Let(
            r,
            RefCreate(x),
            Let(
                u,
                RefWrite(r, Call(f, [RefRead(r)])),
                Let(
                    p,
                    Tuple([x, Tuple([]), Tuple([x])]),
                    Match(
                        p,
                        [
                            Clause(
                                PatternTuple([PatternVar(a), PatternWildcard(), PatternTuple([PatternVar(b)])]),
                                If(call("less", a, b), TupleGetItem(p, 0), RefRead(r)),
                            )
                        ],
                    ),
                ),
            ),
        ),
    )
    mod = IRModule()
    mod["main"] = Function([x], body, F32)
    roundtrip_module(mod)


def test_let_in_argument_position_and_sharing_across_scopes():
    c, x, y = var("c", "bool"), var("x", F32), var("y")
    shared = call("negative", x)
    inner = Let(y, call("add", shared, x), y)
    body = If(c, call("add", inner, shared), call("multiply", shared, Let(var("z"), shared, shared)))
    mod = IRModule()
    mod["main"] = Function([c, x], Tuple([body, shared]))
    roundtrip_module(mod)


def test_types_of_every_kind():
    a = TypeVar("A")
    x = var("x", TensorType((Any(), 3, 1), "float16"))
    t = var("t", TupleType([I32, TupleType([scalar_type("bool")]), TupleType([])]))
    g = var("g", FuncType([F32, TensorType((2,), "int64")], TupleType([])))
    r = var("r", RefType(TensorType((1,), "uint8")))
    i = var("i", IncompleteType())
    poly = var("poly", a)
    mod = IRModule()
    mod["main"] = Function([x, t, g, r, i, poly], Tuple([x, t, g, r, i, poly]), None, [a])
    roundtrip_module(mod)


def test_attributes_of_unregistered_operators_and_functions():
    x = var("x", F32)
    body = call(
        "test.opaque",
        x,
        axis=[1, -2],
        eps=1e-05,
        ratio=0.1,
        whole=3.0,
        big=2147483648,
        label='q"uo\\te\n',
        on=True,
        off=False,
        nothing=None,
        nested=[[0, 1], [2, 3]],
        device=MetaRef("VirtualDevice", 2),
    )
    mod = IRModule()
    mod["main"] = Function([x], body, attrs={"Primitive": 1, "Compiler": "ccompiler", "global_symbol": "main"})
    back = roundtrip_module(mod)
    attrs = back["main"].body.attrs
    assert attrs["eps"] == 1e-05 and attrs["ratio"] == 0.1 and attrs["device"] == MetaRef("VirtualDevice", 2)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"])
def test_constants_of_every_dtype_scalar_and_tensor(dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool":
        values = [True, False]
    elif dtype.startswith("float"):
        values = list(rng.standard_normal(20).astype(dtype)) + [
            0.0,
            -0.0,
            1e-05,
            65504 if dtype == "float16" else 3.4e38,
            float("nan"),
            float("inf"),
            -float("inf"),
        ]
    else:
        info = np.iinfo(dtype)
        values = [0, 1, int(info.min), int(info.max), 7]
    scalars = [const(v, dtype) for v in values]
    tensor = const(np.asarray(values, dtype=dtype).reshape(-1, 1))
    expr = Tuple([*scalars, tensor, const(np.zeros((0, 3), dtype))])
    back = roundtrip_expr(expr)
    for original, parsed in zip(expr.fields, back.fields):
        assert isinstance(parsed, Constant) and parsed.data.dtype == original.data.dtype


def test_free_variables_and_odd_names():
    x, x_again, anon, digits = var("x", F32), var("x", F32), var(""), var("42")
    roundtrip_expr(Tuple([call("add", x, x_again), anon, digits]))
    lone = var("lone", I32)
    roundtrip_expr(lone)


def test_reused_var_objects():
    x = var("x", F32)
    a = TypeVar("A")
    y = var("y", a)
    mod = IRModule()
    mod["f"] = Function([x], Tuple([Call(Function([x], call("negative", x)), [x]), x]))
    mod["g"] = Function([x, y], Function([y], y, a, [a]), None, [a])
    roundtrip_module(mod)


def test_deep_graph_and_let_chains():
    x = var("x", F32)
    body = x
    for _ in range(1600):
        body = call("add", body, x)
    chain = body
    for i in range(2000):
        v = var(f"v{i}")
        chain = Let(v, call("negative", x), chain) if i % 2 else Let(v, chain, v)
    mod = IRModule()
    mod["main"] = Function([x], chain)
    roundtrip_module(mod)


def test_empty_module_and_metadata_only_module():
    roundtrip_module(IRModule())
    mod = IRModule()
    mod["main"] = Function([], const(np.arange(4, dtype="int64")))
    text = astext(mod)
    assert len(json.loads(text.split("#[metadata]\n")[1])["b64ndarrays"]) == 1
    roundtrip_module(mod)


# ----- the corpus ----------------------------------------------------------------------------------
# Constant data only has to survive the trip, so files whose tables would exceed this many elements
# (GPT-2: 124M parameters, 660 MB of text) get small stand-in tensors of the same dtype and rank.
_FULL_SIZE_BUDGET = 40_000_000


def _corpus_id(record):
    return record["file"]


@pytest.mark.parametrize("record", records(expected="ok"), ids=_corpus_id)
def test_corpus_file_roundtrips(record):
    source = (CORPUS / record["file"]).read_text()
    init = init_module_or_stand_in(record, source)
    table = meta_table(record, element_budget=_FULL_SIZE_BUDGET)
    if record["kind"] == "module":
        original = parse(source, source_name=record["file"], init_module=init, init_meta_table=table)
        text = astext(original)
        back = parse(text, source_name="printed")
        assert_structural_equal(original, back)
    else:
        original = parse_expr(source, source_name=record["file"], init_module=init, init_meta_table=table)
        text = astext(original)
        back = parse_expr(text, source_name="printed", init_module=init)
        assert_structural_equal(original, back, map_free_vars=True)
    # A second trip prints the same text (names and numbering are stable).
    assert astext(back) == text
