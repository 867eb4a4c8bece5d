"""Structural equality and hashing: alpha-equivalence, free variables, constants, modules, hashes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transpile.relay.attrs import Attrs
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
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    Tuple,
    TupleGetItem,
    TypeData,
    Var,
    const,
    var,
)
from transpile.relay.module import IRModule
from transpile.relay.printer import astext_node
from transpile.relay.structural import assert_structural_equal, structural_equal, structural_hash
from transpile.relay.ty import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
    scalar_type,
)

F32 = scalar_type("float32")
I32 = scalar_type("int32")


def call(name, *args, **attrs):
    return Call(Op.get(name), list(args), Attrs(attrs) if attrs else None)


def equal_and_same_hash(a, b, map_free_vars=False):
    assert structural_equal(a, b, map_free_vars)
    assert structural_equal(b, a, map_free_vars)
    assert structural_hash(a, map_free_vars) == structural_hash(b, map_free_vars)


def unequal(a, b, map_free_vars=False):
    assert not structural_equal(a, b, map_free_vars)
    assert not structural_equal(b, a, map_free_vars)


def list_adt(param_name="A"):
    a = TypeVar(param_name)
    list_t = GlobalTypeVar("List")
    data = TypeData(
        list_t, [a], [Constructor("Cons", [a, TypeCall(list_t, [a])], list_t), Constructor("Nil", [], list_t)]
    )
    return list_t, data


# ----- alpha-equivalence ------------------------------------------------------------------------------
def test_functions_equal_up_to_renaming_of_parameters():
    x, y = var("x", F32), var("y", F32)
    p, q = var("p", F32), var("q", F32)
    equal_and_same_hash(Function([x, y], call("add", x, y)), Function([p, q], call("add", p, q)))
    # Swapped uses are a different function.
    unequal(Function([x, y], call("add", x, y)), Function([p, q], call("add", q, p)))


def test_let_and_pattern_variables_are_binders():
    x, a, b = var("x", I32), var("a"), var("b")
    equal_and_same_hash(Function([x], Let(a, call("negative", x), a)), Function([x], Let(b, call("negative", x), b)))
    unequal(Function([x], Let(a, x, a)), Function([x], Let(b, x, x)))
    list_t, data = list_adt()
    cons, nil = data.constructors
    xs = var("xs", TypeCall(list_t, [I32]))
    h1, t1, h2, t2 = var("h"), var("t"), var("head"), var("tail")

    def sum_head(h, t, use):
        return Function(
            [xs],
            Match(
                xs,
                [
                    Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(t)]), use(h, t)),
                    Clause(PatternWildcard(), const(0)),
                ],
            ),
        )

    equal_and_same_hash(sum_head(h1, t1, lambda h, t: h), sum_head(h2, t2, lambda h, t: h))
    unequal(sum_head(h1, t1, lambda h, t: h), sum_head(h2, t2, lambda h, t: t))


def test_type_parameters_are_binders():
    a, b = TypeVar("A"), TypeVar("B")
    c, d = TypeVar("C"), TypeVar("D")
    xa, xc = var("x", a), var("x", c)
    equal_and_same_hash(Function([xa], xa, a, [a]), Function([xc], xc, c, [c]))
    equal_and_same_hash(FuncType([a], a, [a]), FuncType([c], c, [c]))
    unequal(FuncType([a, b], a, [a, b]), FuncType([c, d], d, [c, d]))
    unequal(Function([xa], xa, a, [a]), Function([xc], xc, c, [c, d]))
    # A free type variable is only equal to itself.
    unequal(FuncType([a], a), FuncType([c], c))
    equal_and_same_hash(FuncType([a], a), FuncType([c], c), map_free_vars=True)


def test_type_definitions_equal_up_to_type_parameter_names():
    equal_and_same_hash(list_adt("A")[1], list_adt("T")[1])
    other_t = GlobalTypeVar("List")
    a = TypeVar("A")
    unequal(list_adt()[1], TypeData(other_t, [a], [Constructor("Cons", [a], other_t), Constructor("Nil", [], other_t)]))


# ----- free variables, annotations, constants, attributes ----------------------------------------
def test_free_variables_equal_only_if_identical_unless_mapped():
    x, y, z = var("x", F32), var("x", F32), var("z", F32)
    equal_and_same_hash(call("add", x, x), call("add", x, x))
    unequal(call("add", x, x), call("add", y, y))
    equal_and_same_hash(call("add", x, x), call("add", y, y), map_free_vars=True)
    # The mapping must be consistent: x, x cannot map to y, z.
    unequal(call("add", x, x), call("add", y, z), map_free_vars=True)
    # A free variable never equals a bound one.
    unequal(Function([z], call("add", x, z)), Function([z], call("add", z, z)), map_free_vars=True)


def test_type_annotations_are_compared():
    x, y, u = var("x", F32), var("y", I32), var("u")
    unequal(Function([x], x), Function([y], y))
    unequal(Function([x], x), Function([u], u))
    unequal(Function([x], x, F32), Function([x], x))
    equal_and_same_hash(IncompleteType(), IncompleteType())


def test_constants_compare_dtype_shape_and_bits():
    equal_and_same_hash(
        const(np.arange(6, dtype="float32").reshape(2, 3)), const(np.arange(6, dtype="float32").reshape(2, 3))
    )
    unequal(const(np.arange(6, dtype="float32")), const(np.arange(6, dtype="float32").reshape(2, 3)))
    unequal(const(1.0), const(1.0, "float64"))
    unequal(const(1.0), const(2.0))
    equal_and_same_hash(const(float("nan")), const(float("nan")))
    unequal(const(0.0), const(-0.0))


def test_attributes_compare_by_value_and_none_equals_empty():
    x = var("x", F32)
    equal_and_same_hash(Call(Op.get("test.op"), [x], None), Call(Op.get("test.op"), [x], Attrs()))
    equal_and_same_hash(call("test.op", x, axis=[1, 2]), call("test.op", x, axis=(1, 2)))
    unequal(call("test.op", x, axis=[1, 2]), call("test.op", x, axis=[2, 1]))
    unequal(call("test.op", x, axis=1), call("test.op", x))
    unequal(call("test.op", x, flag=True), call("test.op", x, flag=1))
    unequal(Function([x], x, attrs={"Primitive": 1}), Function([x], x))


def test_globals_ops_and_constructors_compare_by_name():
    list_t, data = list_adt()
    other_list, other_data = list_adt("B")
    equal_and_same_hash(Call(GlobalVar("f"), []), Call(GlobalVar("f"), []))
    unequal(Call(GlobalVar("f"), []), Call(GlobalVar("g"), []))
    unequal(Op.get("add"), Op.get("subtract"))
    equal_and_same_hash(data.constructors[0], other_data.constructors[0])
    # A zero-arity constructor written bare reads back as its call: the two are the same value.
    nil = data.constructors[1]
    equal_and_same_hash(nil, Call(nil, []))
    unequal(data.constructors[0], Call(data.constructors[0], []))


def test_sharing_does_not_matter():
    x = var("x", F32)
    shared = call("negative", x)
    dag = Function([x], call("add", shared, shared))
    tree = Function([x], call("add", call("negative", x), call("negative", x)))
    equal_and_same_hash(dag, tree)
    # A shared closure compared against two separate copies binds its parameter twice.
    y1, y2, y3 = var("y"), var("y"), var("y")
    f = Function([y1], y1)
    equal_and_same_hash(Tuple([f, f]), Tuple([Function([y2], y2), Function([y3], y3)]))


def test_same_var_reused_as_binder_in_two_functions():
    x = var("x", F32)
    a, b = var("a", F32), var("b", F32)
    mod1, mod2 = IRModule(), IRModule()
    mod1["f"], mod1["g"] = Function([x], x), Function([x], call("negative", x))
    mod2["f"], mod2["g"] = Function([a], a), Function([b], call("negative", b))
    equal_and_same_hash(mod1, mod2)


def test_shadowing_is_respected():
    x, y, z = var("x"), var("y"), var("z")
    # fn (%x) { fn (%y) { %x } }  vs  fn (%z) { fn (%z) { %z } }  (inner z shadows the outer)
    unequal(Function([x], Function([y], x)), Function([z], Function([z], z)))


def test_modules_match_functions_and_types_by_name():
    x, y = var("x", F32), var("y", F32)
    list_t, data = list_adt()
    m1, m2 = IRModule(), IRModule()
    m1.add_type_data(list_t, data)
    m2.add_type_data(list_adt("Z")[0], list_adt("Z")[1])
    m1["f"], m1["main"] = Function([x], x), Function([y], Call(GlobalVar("f"), [y]))
    m2["main"], m2["f"] = Function([y], Call(GlobalVar("f"), [y])), Function([x], x)
    equal_and_same_hash(m1, m2)
    m2["g"] = Function([x], x)
    unequal(m1, m2)
    m3 = IRModule()
    m3["f"], m3["main"] = Function([x], x), Function([y], Call(GlobalVar("f"), [y]))
    unequal(m1, m3)


def test_assert_structural_equal_names_the_first_difference():
    x = var("x", F32)
    left = Function([x], Tuple([x, call("add", x, const(1.0))]))
    right = Function([x], Tuple([x, call("add", x, const(2.0))]))
    assert_structural_equal(left, left)
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(left, right)
    message = str(info.value)
    assert ".body.fields[1].args[1]" in message
    assert "different constants" in message
    assert "lhs: 1f" in message and "rhs: 2f" in message


def test_deep_chains_compare_and_hash():
    def chain(n):
        x = var("x", F32)
        body = x
        for _ in range(n):
            body = call("add", body, body)
        return Function([x], body)

    equal_and_same_hash(chain(5000), chain(5000))
    unequal(chain(5000), chain(4999))


def test_type_call_without_arguments_is_the_adt():
    storage = GlobalTypeVar("Storage")
    equal_and_same_hash(TypeCall(storage, []), storage)
    equal_and_same_hash(TupleType([TensorType((1, 2))]), TupleType([TensorType((1, 2))]))


# ----- hash consistency over generated programs -----------------------------------------------------
_TYPES = [F32, I32, None]


@st.composite
def programs(draw, depth=0, scope=()):
    """Small well-scoped expressions over a few operators, with lets, ifs, closures and tuples."""
    leaves = ["const"] + (["var"] if scope else [])
    kinds = leaves if depth >= 4 else leaves + ["call", "let", "if", "fn", "tuple", "ref"]
    kind = draw(st.sampled_from(kinds))
    if kind == "var":
        return draw(st.sampled_from(scope))
    if kind == "const":
        return const(draw(st.integers(-3, 3)), draw(st.sampled_from(["int32", "float32"])))
    sub = lambda extra=(): programs(depth + 1, scope + tuple(extra))  # noqa: E731
    if kind == "call":
        return call(draw(st.sampled_from(["add", "multiply"])), draw(sub()), draw(sub()))
    if kind == "let":
        v = var(draw(st.sampled_from("abc")), draw(st.sampled_from(_TYPES)))
        return Let(v, draw(sub()), draw(sub([v])))
    if kind == "if":
        return If(draw(sub()), draw(sub()), draw(sub()))
    if kind == "fn":
        params = [
            var(draw(st.sampled_from("pq")), draw(st.sampled_from(_TYPES))) for _ in range(draw(st.integers(0, 2)))
        ]
        return Call(Function(params, draw(sub(params))), [draw(sub()) for _ in params])
    if kind == "tuple":
        fields = [draw(sub()) for _ in range(draw(st.integers(1, 3)))]
        return TupleGetItem(Tuple(fields), draw(st.integers(0, len(fields) - 1)))
    return RefRead(RefCreate(draw(sub())))


def rename(e, env=None):
    """A copy with fresh variables (new names) for every binder; free variables are kept."""
    env = dict(env or {})
    if isinstance(e, Var):
        return env.get(e, e)
    if isinstance(e, Let):
        fresh = Var(e.var.name_hint + "_r", e.var.type_annotation)
        return Let(fresh, rename(e.value, env), rename(e.body, {**env, e.var: fresh}))
    if isinstance(e, Function):
        fresh = [Var(p.name_hint + "_r", p.type_annotation) for p in e.params]
        return Function(fresh, rename(e.body, {**env, **dict(zip(e.params, fresh))}), e.ret_type)
    if isinstance(e, Call):
        return Call(rename(e.op, env), [rename(a, env) for a in e.args], e.attrs)
    if isinstance(e, If):
        return If(rename(e.cond, env), rename(e.true_branch, env), rename(e.false_branch, env))
    if isinstance(e, Tuple):
        return Tuple([rename(f, env) for f in e.fields])
    if isinstance(e, TupleGetItem):
        return TupleGetItem(rename(e.tuple_value, env), e.index)
    if isinstance(e, RefRead):
        return RefRead(rename(e.ref, env))
    if isinstance(e, RefCreate):
        return RefCreate(rename(e.value, env))
    return e


def bump_constants(e):
    """The same program with every constant incremented (structurally different when any exist)."""
    if isinstance(e, Var) or isinstance(e, Op):
        return e
    if e.__class__.__name__ == "Constant":
        return const(e.data + 1, e.data.dtype.name)
    if isinstance(e, Let):
        return Let(e.var, bump_constants(e.value), bump_constants(e.body))
    if isinstance(e, Function):
        return Function(e.params, bump_constants(e.body), e.ret_type)
    if isinstance(e, Call):
        return Call(bump_constants(e.op), [bump_constants(a) for a in e.args], e.attrs)
    if isinstance(e, If):
        return If(bump_constants(e.cond), bump_constants(e.true_branch), bump_constants(e.false_branch))
    if isinstance(e, Tuple):
        return Tuple([bump_constants(f) for f in e.fields])
    if isinstance(e, TupleGetItem):
        return TupleGetItem(bump_constants(e.tuple_value), e.index)
    if isinstance(e, RefRead):
        return RefRead(bump_constants(e.ref))
    if isinstance(e, RefCreate):
        return RefCreate(bump_constants(e.value))
    return e


FREE = (var("free", F32),)


@settings(max_examples=100, deadline=None)
@given(programs(scope=FREE))
def test_renamed_copies_are_equal_and_hash_alike(program):
    copy = rename(program)
    equal_and_same_hash(program, copy)
    equal_and_same_hash(Function([], program), Function([], copy), map_free_vars=True)
    assert structural_hash(program) == structural_hash(program)


@settings(max_examples=100, deadline=None)
@given(programs(scope=FREE))
def test_changed_constants_are_unequal(program):
    changed = bump_constants(program)
    has_constant = astext_node(program) != astext_node(changed)
    assert structural_equal(program, changed) is not has_constant


def test_hash_distinguishes_common_differences():
    x, y = var("x", F32), var("y", F32)
    base = Function([x, y], call("subtract", x, y))
    variants = [
        Function([x, y], call("subtract", y, x)),
        Function([x, y], call("add", x, y)),
        Function([x, y], call("subtract", x, const(1.0))),
        Function([y, x], call("subtract", x, y), F32),
    ]
    for other in variants:
        assert structural_hash(base) != structural_hash(other)


def test_rebinding_the_same_var_object_is_scoped():
    # Builders reuse Var objects: fn (%x) { ((fn (%x) { -%x })(%x), %x) } equals the renamed version.
    x, a, b = var("x", F32), var("a", F32), var("b", F32)
    left = Function([x], Tuple([Call(Function([x], call("negative", x)), [x]), x]))
    right = Function([a], Tuple([Call(Function([b], call("negative", b)), [a]), a]))
    equal_and_same_hash(left, right)
    unequal(left, Function([a], Tuple([Call(Function([b], call("negative", b)), [a]), b])))
    # The same TypeVar bound by a function and again by a function type inside it.
    t, u, w = TypeVar("T"), TypeVar("U"), TypeVar("W")
    y, y2 = var("y", t), var("y", u)
    left = Function([y], y, FuncType([t], FuncType([t], t, [t])), [t])
    right = Function([y2], y2, FuncType([u], FuncType([w], w, [w])), [u])
    equal_and_same_hash(left, right)
    unequal(left, Function([y2], y2, FuncType([u], FuncType([w], u, [w])), [u]))
