"""The builder objects and IRModule behave as tvm.relay's (<= 0.19): type calls, type equality, tags, std imports."""

import numpy as np
import pytest

from transpile import relay
from transpile.errors import TranspileError
from transpile.relay.prelude import UnknownStdFileError


def _box_module():
    box = relay.GlobalTypeVar("Box")
    a = relay.TypeVar("a")
    wrap = relay.Constructor("Wrap", [a], box)
    empty = relay.Constructor("Empty", [], box)
    mod = relay.IRModule()
    mod[box] = relay.TypeData(box, [a], [empty, wrap])
    return mod, box, wrap, empty


def test_global_type_var_call_builds_type_call():
    pair = relay.GlobalTypeVar("Pair")
    a, b = relay.TypeVar("a"), relay.TypeVar("b")
    call = pair(a, b)
    assert isinstance(call, relay.TypeCall)
    assert call.func == pair and call.args == (a, b)
    assert pair() == relay.TypeCall(pair, [])
    assert pair() != pair(a)


def test_func_type_equality_is_alpha_equivalence():
    a, b, c = relay.TypeVar("a"), relay.TypeVar("b"), relay.TypeVar("c")
    lst = relay.GlobalTypeVar("List")
    left = relay.FuncType([lst(a), relay.FuncType([a], b)], lst(b), [a, b])
    right = relay.FuncType([lst(b), relay.FuncType([b], c)], lst(c), [b, c])
    assert left == right
    assert hash(left) == hash(right)
    assert len({left, right}) == 1
    swapped = relay.FuncType([lst(b), relay.FuncType([b], c)], lst(c), [c, b])
    assert left != swapped
    # A free type variable is not renamed: fn(a) -> a with a free differs from the same with b free.
    assert relay.FuncType([a], a) != relay.FuncType([b], b)
    assert relay.FuncType([a], a) == relay.FuncType([a], a)
    # A bound variable on one side never equals a free one on the other.
    assert relay.FuncType([a], b, [a]) != relay.FuncType([b], b, [b])


def test_nested_binders_compare_by_position():
    a, b = relay.TypeVar("a"), relay.TypeVar("b")
    inner_a = relay.FuncType([a], a, [a])
    inner_b = relay.FuncType([b], b, [b])
    assert relay.TupleType([inner_a, relay.RefType(inner_a)]) == relay.TupleType([inner_b, relay.RefType(inner_b)])
    outer_a = relay.FuncType([a], relay.FuncType([a], a), [a])
    outer_b = relay.FuncType([b], relay.FuncType([b], b), [b])
    assert outer_a == outer_b and hash(outer_a) == hash(outer_b)


def test_module_type_definition_item_and_tags():
    mod, box, wrap, empty = _box_module()
    assert isinstance(mod[box], relay.TypeData)
    assert (empty.tag, wrap.tag) == (0, 1)  # the user's own objects are tagged
    assert mod.get_constructor("Wrap") is wrap
    assert mod.get_global_type_var("Box") is box
    assert mod.get_type("Box") == (box, empty, wrap)
    assert dict(mod.type_definitions.items())[box] is mod[box]


def test_constructor_tag_lookup_must_be_unambiguous():
    mod, box, wrap, empty = _box_module()
    assert mod.get_constructor(1) is wrap
    relay.Prelude(mod)  # List, Option, ... also have a constructor with tag 0
    with pytest.raises(KeyError, match="look the constructor up by name"):
        mod.get_constructor(0)


def test_user_adt_type_checks_and_runs():
    mod, box, wrap, empty = _box_module()
    x = relay.var("x", shape=(2,))
    y = relay.var("y")
    mod["main"] = relay.Function(
        [x],
        relay.Match(
            wrap(x),
            [
                relay.Clause(relay.PatternConstructor(wrap, [relay.PatternVar(y)]), y),
                relay.Clause(relay.PatternConstructor(empty), relay.zeros((2,), "float32")),
            ],
        ),
    )
    mod = relay.transform.InferType()(mod)
    assert mod["main"].checked_type == relay.FuncType([relay.TensorType((2,))], relay.TensorType((2,)))
    assert mod["main"].body.data.checked_type == box(relay.TensorType((2,)))
    result = relay.create_executor(mod=mod).evaluate()(np.array([1.0, 2.0], "float32"))
    np.testing.assert_allclose(result.numpy(), [1.0, 2.0])


def test_setitem_wraps_non_functions_and_eta_expands_globals():
    mod = relay.IRModule()
    mod["two"] = relay.const(2.0) + relay.const(0.5)
    assert isinstance(mod["two"], relay.Function) and not mod["two"].params
    x = relay.var("x", shape=(3,))
    mod["double"] = relay.Function([x], x + x)
    mod["twice"] = mod.get_global_var("double")
    twice = mod["twice"]
    assert isinstance(twice.body, relay.Call) and twice.body.op == mod.get_global_var("double")
    mod = relay.transform.InferType()(mod)
    assert mod["twice"].checked_type == mod["double"].checked_type
    with pytest.raises(TranspileError, match="not in the module"):
        mod["other"] = relay.GlobalVar("missing")
    with pytest.raises(TranspileError, match="TypeData"):
        mod[relay.GlobalTypeVar("T")] = relay.const(1)


def test_prelude_leaves_type_checked_module_and_tvm_lookups():
    p = relay.Prelude(relay.IRModule())
    rlist, cons, nil = p.mod.get_type("List")
    a = relay.TypeVar("a")
    b = relay.TypeVar("b")
    assert p.mod[p.map].checked_type == relay.FuncType([relay.FuncType([a], b), rlist(a)], rlist(b), [a, b])
    assert p.mod[p.length].checked_type == relay.FuncType([rlist(a)], relay.scalar_type("int32"), [a])
    assert p.get_global_var("map") == p.map
    assert p.get_name("tensor_t", "float32") == "tensor_float32_t"
    assert p.get_name("tensor_array", "int8") == "tensor_array_int8"
    assert p.get_ctor("List", "Cons") is cons


def test_import_from_std_files():
    mod = relay.IRModule()
    checked = mod.import_from_std("nat.rly")
    nat, zero, succ = mod.get_type("nat")
    assert checked["nat_add"].checked_type == relay.FuncType([nat(), nat()], nat())
    mod.import_from_std("prelude.rly")  # again: already there, nothing duplicated
    mod.import_from_std("gradient.rly")
    cell = mod.get_global_type_var("GradCell")
    t = relay.TypeVar("t")
    assert mod["FromGradCell"].checked_type == relay.FuncType([cell(t)], t, [t])
    mod.import_from_std("core.rly")
    assert mod.get_global_type_var("Storage").name_hint == "Storage"
    with pytest.raises(UnknownStdFileError, match="no file 'missing.rly'"):
        mod.import_from_std("missing.rly")


def test_constant_data_is_ndarray_and_numpy():
    c = relay.const(np.arange(6, dtype="int32").reshape(2, 3))
    assert c.data.numpy().sum() == 15
    assert isinstance(c.data, np.ndarray)
    assert c.data[1, 2] == 5 and c.dtype == "int32"
    assert relay.const(2.5).data.numpy().item() == 2.5
    with pytest.raises(ValueError):
        c.data[0, 0] = 1  # constants stay read-only


def test_builder_keyword_inputs():
    x = relay.var("x", shape=(2, 2))
    y = relay.var("y", shape=(2, 2))
    assert relay.structural_equal(relay.nn.relu(data=x), relay.nn.relu(x))
    assert relay.structural_equal(relay.add(lhs=x, rhs=y), relay.add(x, y))
    assert relay.structural_equal(relay.subtract(x, rhs=y), relay.subtract(x, y))
    assert relay.structural_equal(relay.transpose(data=x, axes=(1, 0)), relay.transpose(x, (1, 0)))
    with pytest.raises(TypeError, match="twice"):
        relay.add(x, lhs=y)
    with pytest.raises(TypeError, match="missing"):
        relay.add(rhs=y)


def test_split_and_batch_norm_return_tuple_wrappers():
    x = relay.var("x", shape=(6, 4))
    parts = relay.split(x, 3, axis=0)
    assert isinstance(parts, relay.TupleWrapper) and len(parts) == 3
    assert len(relay.split(x, [1, 4])) == 3
    assert isinstance(parts[2], relay.TupleGetItem) and parts[-1].index == 2
    with pytest.raises(IndexError):
        parts[3]
    f = relay.Function([x], relay.Tuple([parts[0], parts[2]]))
    data = np.arange(24, dtype="float32").reshape(6, 4)
    first, last = relay.create_executor(mod=relay.IRModule.from_expr(f)).evaluate()(data)
    np.testing.assert_allclose(last.numpy(), data[4:])
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x], parts.astuple())))
    assert len(mod["main"].checked_type.ret_type.fields) == 3
    vec = lambda name: relay.var(name, shape=(4,))  # noqa: E731
    norm = relay.nn.batch_norm(x, vec("g"), vec("b"), vec("m"), vec("v"), axis=1)
    assert len(norm) == 3 and norm[0].index == 0
