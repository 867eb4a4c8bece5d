"""Static tensor arrays (StaticTensorArrayOps) and the dynamic per-dtype ones: names, types, idempotency, results."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import TranspileError
from transpile.relay.prelude import Prelude, StaticTensorArrayOps, TensorArrayOps, get_tensor_array_shape
from transpile.relay.prelude_static import TensorArrayLookupError, static_name
from transpile.relay.ty import SymbolicDim
from transpile.runtime import ADTValue

ANY = relay.Any()
INTERPRETED = ["interpreter", "python"]


def _ops(dtype, shape, batch_dim=None):
    ops = StaticTensorArrayOps(Prelude(relay.IRModule()), dtype, shape, batch_dim)
    ops.register()
    return ops


def _run(mod, body_of, params, args, backend):
    """Compiles @main = fn(params) { body_of(*params) } of `mod` and calls it with `args`."""
    mod["main"] = relay.Function(params, body_of(*params))
    return transpile.compile(mod, backend=backend)(*args)


def _tensors(value):
    """A List of static tensors as a Python list: arrays, None for tensor_nil."""
    items = []
    while value.constructor == "Cons":
        head, value = value.fields
        items.append(head.fields[0] if head.fields else None)
    assert value.constructor == "Nil"
    return items


def _array_value(ops, arrays):
    """The Relay List of `ops`' tensors holding `arrays` (an argument value)."""
    ctor = ops.get_name("tensor_constructor")
    value = ADTValue("Nil")
    for array in reversed(arrays):
        value = ADTValue("Cons", (ADTValue(ctor, (array,)), value))
    return value


def _assert_tensor(value, constructor, expected):
    assert value.constructor == constructor
    (actual,) = value.fields
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)


def _random(shape, dtype, seed=0):
    return (np.random.default_rng(seed).uniform(0, 10, size=shape)).astype(dtype)


# ----- names, types, idempotency ---------------------------------------------------------------


def test_names_spell_shapes_as_tvm_did():
    assert static_name("tensor_t", "float32", [ANY, 3]) == "static_tensor_float32_any_3_t"
    assert static_name("tensor_array_read", "int32", [2, 3]) == "tensor_array_read_int32_2_3"
    assert static_name("tensor_array", "float32", []) == "tensor_array_float32_scalar"
    assert static_name("tensor_array_stack", "float32", [2], batch_dim=1) == "tensor_array_stack_float32_batch1_2"
    assert static_name("tensor_array_stack", "float32", [2], batch_dim=4) == "tensor_array_stack_float32_2"
    assert static_name("tensor_constructor", "float32", [2], batch_dim=1) == "tensor_constructor_float32_2"
    assert static_name("tensor_array_scatter", "int8", [ANY], extra_shapes={"indices": [5]}) == (
        "tensor_array_scatter_int8_any_indices_5"
    )
    assert static_name("tensor_get_data", "float32", [SymbolicDim("n"), 4]) == "tensor_get_data_float32_n_4"
    assert Prelude.get_name_static("tensor_nil", "uint8", (np.int64(7),)) == "tensor_nil_uint8_7"


@pytest.mark.parametrize("dtype, shape", [("float32", [2, 3]), ("int32", [ANY, 3]), ("float32", [])])
def test_registered_module_type_checks(dtype, shape):
    ops = _ops(dtype, shape)
    typed = relay.transform.InferType()(ops.prelude.mod)
    read = typed[ops.get_global_var("tensor_array_read")]
    element = ops.get_name("tensor_t")
    assert str(read.checked_type) == f"fn (List[{element}], int32) -> {element}"
    stacked = static_name("tensor_t", dtype, [ANY, *shape])
    assert typed[ops.get_global_var("tensor_array_stack")].checked_type.ret_type.func.name_hint == stacked
    tensor_type = relay.TensorType(shape, dtype)
    assert typed[ops.get_global_var("tensor_get_data")].checked_type.ret_type == tensor_type


def test_registering_twice_changes_nothing():
    ops = _ops("float32", [ANY, 3])
    mod = ops.prelude.mod
    functions = dict(mod.functions)
    types = dict(mod.type_definitions)
    ops.register()
    StaticTensorArrayOps(ops.prelude, "float32", [relay.Any(), 3]).register()
    assert mod.functions == functions
    assert all(mod.functions[gv] is func for gv, func in functions.items())
    assert all(mod.type_definitions[gtv] is data for gtv, data in types.items())
    # A second Prelude over the same module keeps them too.
    Prelude(mod)
    assert all(mod.functions[gv] is func for gv, func in functions.items())


def test_lookups_of_the_prelude():
    ops = _ops("int32", [2])
    p = ops.prelude
    assert p.get_type_static("tensor_t", "int32", [2]).name_hint == "static_tensor_int32_2_t"
    nil = p.get_tensor_ctor_static("tensor_nil", "int32", [2])
    assert nil.name_hint == "tensor_nil_int32_2" and nil.belong_to == ops.tensor_type_var
    assert p.get_ctor_static("tensor_t", "tensor_constructor", "int32", [2]).inputs == (relay.TensorType([2], "int32"),)
    assert p.get_global_var_static("tensor_array_write", "int32", [2]).name_hint == "tensor_array_write_int32_2"
    with pytest.raises(TensorArrayLookupError, match="tensor_array_write_int32_5"):
        p.get_global_var_static("tensor_array_write", "int32", [5])
    with pytest.raises(TensorArrayLookupError, match="static_tensor_int32_5_t"):
        p.get_tensor_ctor_static("tensor_nil", "int32", [5])
    with pytest.raises(TranspileError, match="shape"):
        StaticTensorArrayOps(p, "int32", "2x3")
    with pytest.raises(TranspileError, match="dtype"):
        StaticTensorArrayOps(p, "flaot32", [2])
    with pytest.raises(TranspileError, match="dtype"):
        p.get_global_var("tensor_array", "flaot32")


def test_tensor_array_shape_is_read_back_from_the_element_type():
    ops = _ops("float32", [ANY, 3])
    array = ops.get_global_var("tensor_array")(relay.const(2))
    assert get_tensor_array_shape(array, "float32", ops.prelude) == (ANY, 3)
    scalar_ops = StaticTensorArrayOps(ops.prelude, "float32", [])
    scalar_ops.register()
    scalar_array = scalar_ops.get_global_var("tensor_array")(relay.const(1))
    assert get_tensor_array_shape(scalar_array, "float32", ops.prelude) == ()
    dynamic = ops.prelude.get_global_var("tensor_array", "float32")(relay.const(1))
    assert get_tensor_array_shape(dynamic, "float32", ops.prelude) is None


# ----- results ---------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", INTERPRETED)
@pytest.mark.parametrize("dtype, shape", [("float32", []), ("int32", [2, 3])])
def test_write_then_read(backend, dtype, shape):
    ops = _ops(dtype, shape)
    tensor_ctor, write = ops.get_ctor("tensor_constructor"), ops.get_global_var("tensor_array_write")
    first, second = _random(shape, dtype, 1), _random(shape, dtype, 2)

    def body(v0, v1, n):
        array = write(ops.get_global_var("tensor_array")(relay.const(3)), relay.const(0), tensor_ctor(v0))
        array = write(array, relay.const(2), tensor_ctor(v1))
        read = ops.get_global_var("tensor_array_read")(array, n)
        return relay.Tuple([array, ops.get_global_var("tensor_get_data")(read)])

    params = [relay.var(name, shape=shape, dtype=dtype) for name in ("v0", "v1")] + [relay.var("n", "int32")]
    array, data = _run(ops.prelude.mod, body, params, [first, second, np.int32(2)], backend)
    written = _tensors(array)
    assert written[1] is None and len(written) == 3
    np.testing.assert_array_equal(written[0], first)
    np.testing.assert_array_equal(written[2], second)
    np.testing.assert_array_equal(data, second)


@pytest.mark.parametrize("backend", INTERPRETED)
@pytest.mark.parametrize("dtype, shape", [("float32", [2, 3]), ("int32", [])])
def test_stack_and_gather(backend, dtype, shape):
    ops = _ops(dtype, shape)
    arrays = [_random(shape, dtype, seed) for seed in range(3)]
    ta = relay.var("ta", ops.list(ops.tensor_type_var()))
    indices = relay.var("indices", shape=(4,), dtype="int32")
    stack, gather = ops.get_global_var("tensor_array_stack"), ops.get_global_var("tensor_array_gather")
    picks = np.array([2, 0, 2, 1], dtype="int32")
    both = lambda ta, i: relay.Tuple([stack(ta), gather(ta, i)])  # noqa: E731
    stacked, gathered = _run(ops.prelude.mod, both, [ta, indices], [_array_value(ops, arrays), picks], backend)
    out_ctor = static_name("tensor_constructor", dtype, [ANY, *shape])
    _assert_tensor(stacked, out_ctor, np.stack(arrays))
    _assert_tensor(gathered, out_ctor, np.stack([arrays[i] for i in picks]))


@pytest.mark.parametrize("backend", INTERPRETED)
def test_stack_with_batch_dim_one(backend):
    ops = _ops("float32", [2, 2], batch_dim=1)
    stack = ops.get_global_var("tensor_array_stack")
    assert stack.name_hint == "tensor_array_stack_float32_batch1_2_2"
    only = _random([2, 2], "float32")
    ta = relay.var("ta", ops.list(ops.tensor_type_var()))
    stacked = _run(ops.prelude.mod, lambda ta: stack(ta), [ta], [_array_value(ops, [only])], backend)
    _assert_tensor(stacked, "tensor_constructor_float32_1_2_2", only[None])


@pytest.mark.parametrize("backend", INTERPRETED)
def test_concat_of_a_run_time_dim(backend):
    ops = _ops("float32", [ANY, 3])
    arrays = [_random((2, 3), "float32", 1), _random((1, 3), "float32", 2), _random((4, 3), "float32", 3)]
    ta = relay.var("ta", ops.list(ops.tensor_type_var()))
    concat = ops.get_global_var("tensor_array_concat")
    joined = _run(ops.prelude.mod, lambda ta: concat(ta), [ta], [_array_value(ops, arrays)], backend)
    _assert_tensor(joined, "tensor_constructor_float32_any_3", np.concatenate(arrays))
    empty = _run(ops.prelude.mod, lambda ta: concat(ta), [ta], [ADTValue("Nil")], backend)
    assert empty == ADTValue("tensor_nil_float32_any_3")


@pytest.mark.parametrize("backend", INTERPRETED)
@pytest.mark.parametrize("shape", [[3, 2], [ANY, 2]])
def test_unstack(backend, shape):
    ops = _ops("int32", shape)
    t = np.arange(8, dtype="int32").reshape(4, 2)[: 3 if shape[0] == 3 else 4]
    tensor = relay.var("t", shape=shape, dtype="int32")
    rows = _run(ops.prelude.mod, ops.get_global_var("tensor_array_unstack"), [tensor], [t], backend)
    assert len(_tensors(rows)) == len(t)
    assert rows.fields[0].constructor == "tensor_constructor_int32_2"
    for actual, expected in zip(_tensors(rows), t):
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("backend", INTERPRETED)
@pytest.mark.parametrize("indices_shape", [None, [2]])
def test_scatter(backend, indices_shape):
    ops = _ops("float32", [2, 3])
    if indices_shape is not None:
        ops.define_tensor_array_scatter(indices_shape, force_update=True)
    scatter = _global(ops, "tensor_array_scatter", {"indices": indices_shape} if indices_shape else None)
    arrays = [_random((2, 3), "float32", seed) for seed in range(3)]
    values = [_random((2, 3), "float32", seed) for seed in (10, 11)]
    array_type = ops.list(ops.tensor_type_var())
    params = [relay.var("ta", array_type), relay.var("i", shape=(2,), dtype="int32"), relay.var("values", array_type)]
    args = [_array_value(ops, arrays), np.array([2, 0], dtype="int32"), _array_value(ops, values)]
    result = _tensors(_run(ops.prelude.mod, scatter, params, args, backend))
    for actual, expected in zip(result, [values[1], arrays[1], values[0]]):
        np.testing.assert_array_equal(actual, expected)


def _global(ops, canonical, extra_shapes):
    return ops.prelude.mod.get_global_var(ops.get_name(canonical, extra_shapes))


@pytest.mark.parametrize("backend", INTERPRETED)
def test_split_and_take(backend):
    ops = _ops("float32", [4, 3])
    out = StaticTensorArrayOps(ops.prelude, "float32", [ANY, 3])
    out.define_tensor_array()
    value = _random((4, 3), "float32")
    split, take = ops.get_global_var("tensor_array_split"), ops.get_global_var("tensor_take")
    tensor_ctor = ops.get_ctor("tensor_constructor")

    def body(v, lengths):
        pieces = split(out.get_global_var("tensor_array")(relay.const(3)), tensor_ctor(v), lengths)
        return relay.Tuple([pieces, take(tensor_ctor(v), relay.const(1), relay.const(3))])

    params = [relay.var("v", shape=(4, 3)), relay.var("lengths", shape=(2,), dtype="int32")]
    pieces, taken = _run(ops.prelude.mod, body, params, [value, np.array([1, 3], dtype="int32")], backend)
    pieces = _tensors(pieces)
    np.testing.assert_array_equal(pieces[0], value[:1])
    np.testing.assert_array_equal(pieces[1], value[1:])
    assert pieces[2] is None
    _assert_tensor(taken, "tensor_constructor_float32_any_3", value[1:3])


def test_unstack_write_stack_on_cpp():
    ops = _ops("float32", [3, 2])
    rows = StaticTensorArrayOps(ops.prelude, "float32", [2])
    rows.register()
    t, v = _random((3, 2), "float32", 1), _random((2,), "float32", 2)

    def body(t, v):
        replaced = rows.get_global_var("tensor_array_write")(
            ops.get_global_var("tensor_array_unstack")(t), relay.const(1), rows.get_ctor("tensor_constructor")(v)
        )
        return rows.get_global_var("tensor_array_stack")(replaced)

    params = [relay.var("t", shape=(3, 2)), relay.var("v", shape=(2,))]
    stacked = _run(ops.prelude.mod, body, params, [t, v], "cpp")
    expected = t.copy()
    expected[1] = v
    _assert_tensor(stacked, "tensor_constructor_float32_any_2", expected)


# ----- the dynamic (per-dtype) tensor arrays ---------------------------------------------------


def test_dynamic_types_are_defined_and_functions_on_first_lookup():
    p = Prelude(relay.IRModule())
    tensor_t, nil, *ranks = p.mod.get_type("tensor_float32_t")
    assert nil.name_hint == "tensor_nil_float32" and [c.name_hint for c in ranks][-1] == "tensor6_float32"
    assert "tensor_array_stack_int8" not in {gv.name_hint for gv in p.mod.get_global_vars()}
    stack = p.get_global_var("tensor_array_stack", "int8")
    assert stack.name_hint == "tensor_array_stack_int8"
    typed = relay.transform.InferType()(p.mod)
    assert str(typed[stack].checked_type) == "fn (List[tensor_int8_t]) -> tensor_int8_t"
    functions = dict(p.mod.functions)
    TensorArrayOps(p, "int8").register()
    assert all(p.mod.functions[gv] is func for gv, func in functions.items())


@pytest.mark.parametrize("backend", INTERPRETED)
def test_dynamic_stack_and_unstack(backend):
    p = Prelude(relay.IRModule())
    tensor2 = p.get_tensor_ctor("tensor2", "float32")
    unstack = p.get_global_var("tensor_array_unstack_tensor3", "float32")
    stack = p.get_global_var("tensor_array_stack", "float32")
    t = _random((3, 2, 4), "float32")
    x = relay.var("x", shape=(ANY, ANY, ANY))
    stacked = _run(p.mod, lambda x: stack(unstack(x)), [x], [t], backend)
    _assert_tensor(stacked, "tensor3_float32", t)
    assert tensor2.inputs == (relay.TensorType([ANY, ANY], "float32"),)
