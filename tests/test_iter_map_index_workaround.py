"""The rewrite of buffer indices that tvm 0.27's IterMapSimplify (run by FlattenBuffer in every
tvm.compile) would mis-simplify: the TVM bug itself, the rewrite's exactness, kernels it leaves
alone, and the Relay programs (fuzz seed 122307 and variants) cpp and tir got wrong without it."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
tvm_ffi = pytest.importorskip("tvm_ffi")

from tvm import sym, te, tirx, topi  # noqa: E402
from tvm.script import tirx as T  # noqa: E402

import transpile  # noqa: E402
from transpile import relay  # noqa: E402
from transpile.kernels.iter_map_workaround import (  # noqa: E402
    _Iterators,
    avoid_iter_map_padding,
    needs_iter_map_padding,
)

HAS_GXX = shutil.which("g++") is not None
floordiv, floormod = tirx.floordiv, tirx.floormod


# The scheduled kernel of the fuzz program: out = strided_slice(reshape(p, [1, 4]) + zeros, ...) with
# its three loops fused; the slice's offset 1 lands inside the reshape's unravel.
@T.prim_func(s_tir=True)
def sliced_reshape(p0: T.Buffer((1, 2, 2), "int32"), out: T.Buffer((1, 2, 2), "int32")):
    T.func_attr({"tirx.noalias": True})
    for f in range(4):
        with T.sblock("s"):
            v_i0 = T.axis.spatial(1, 0)
            v_i1 = T.axis.spatial(2, f // 2)
            v_i2 = T.axis.spatial(2, f % 2)
            T.reads(p0[0, (v_i2 + 1) // 2, (v_i2 + 1) % 2])
            T.writes(out[v_i0, v_i1, v_i2])
            out[v_i0, v_i1, v_i2] = p0[0, (v_i2 + 1) // 2, (v_i2 + 1) % 2]


# A store through such an index (pairs swapped), and a value holding a division, which is not an index.
@T.prim_func(s_tir=True)
def padded_store(a: T.Buffer((4,), "int32"), out: T.Buffer((4,), "int32")):
    T.func_attr({"tirx.noalias": True})
    for f in range(4):
        with T.sblock("s"):
            v = T.axis.spatial(4, f)
            T.reads(a[v])
            T.writes(out[v // 2 * 2 + (v % 2 + 1) % 2])
            out[v // 2 * 2 + (v % 2 + 1) % 2] = a[v] * 10 + (v + 1) % 2


def _run(func, *arrays, out_shape, dtype="int32"):
    module = tvm.compile(tvm.IRModule({"main": func}), target="llvm")
    out = tvm.runtime.tensor(np.zeros(out_shape, dtype))
    module["main"](*[tvm.runtime.tensor(a) for a in arrays], out)
    return out.numpy()


def _value(expr, env):
    """`expr` evaluated with the variables of `env` set (the analyzer folds it to a constant)."""
    analyzer = sym.Analyzer()
    for var, value in env.items():
        analyzer.bind(var, tirx.const(value, var.ty.dtype))
    folded = analyzer.simplify(expr)
    assert isinstance(folded, tirx.IntImm), folded
    return int(folded.value)


def _loads_of(func, buffer_name):
    loads = []
    tvm_ffi.structural_walk(
        func, [(tvm.ir.expr.TensorLoad, lambda load: loads.append(load) if load.source.name == buffer_name else None)]
    )
    return loads


def _divisions(expr):
    found = []
    tvm_ffi.structural_walk(expr, [((tirx.FloorDiv, tirx.FloorMod), found.append)])
    return found


# ------------------------------------------------------------------------------------------ the TVM bug
def test_tvm_iter_map_simplify_still_mis_simplifies_a_padded_division():
    """If this fails, tvm fixed IterMap's left padding: the workaround may go (check the sweep first)."""
    f = tirx.Var("f", "int32")
    index = floormod(f, 2) * 2 + floormod(floormod(f, 2) + 1, 2)
    (simplified,) = sym.iter_map_simplify([index], {f: tvm.ir.Range(0, 4)})
    assert [_value(simplified, {f: v}) for v in range(4)] != [_value(index, {f: v}) for v in range(4)]


def test_tvm_compile_reads_the_wrong_element_without_the_rewrite():
    p = np.array([[[4, -2], [4, 1]]], dtype="int32")
    expected = np.array([[[-2, 4], [-2, 4]]], dtype="int32")  # p.reshape(1, 4)[0, 1:3], twice
    assert not np.array_equal(_run(sliced_reshape, p, out_shape=(1, 2, 2)), expected)
    assert np.array_equal(_run(avoid_iter_map_padding(sliced_reshape), p, out_shape=(1, 2, 2)), expected)


# ------------------------------------------------------------------------------------------ the rewrite
def test_the_fuzz_kernel_is_rewritten_exactly():
    fixed = avoid_iter_map_padding(sliced_reshape)
    assert not fixed.same_as(sliced_reshape)
    block = fixed.body.block.body.body.block
    v_i2 = block.iter_vars[2].var
    (before,) = _loads_of(sliced_reshape, "p0")
    (after,) = _loads_of(fixed, "p0")
    for old, new in zip(before.indices, after.indices):
        assert [_value(new, {v_i2: v}) for v in range(2)] == [_value(old, {v_i2: v}) for v in range(2)]
    iterators = _Iterators(fixed)
    assert not any(needs_iter_map_padding(d, iterators) for index in after.indices for d in _divisions(index))
    # the read region says the same as the load
    (region,) = block.reads
    assert all(tvm_ffi.structural_equal(r.min, i) for r, i in zip(region.region, after.indices))


# out[v] = a[v]: the tests put their index expression in place of the load's `v` (te would simplify it)
@T.prim_func(s_tir=True)
def gather_template(a: T.Buffer((64,), "int32"), n: T.int32, out: T.Buffer((12,), "int32")):
    T.func_attr({"tirx.noalias": True})
    for f in range(12):
        with T.sblock("g"):
            v = T.axis.spatial(12, f)
            T.reads(a[v])
            T.writes(out[v])
            out[v] = a[v]


def _index_case(index):
    """gather_template reading a[index(v, n)] (n: a scalar parameter, a symbolic offset); (func, v, n)."""
    v = gather_template.body.block.body.body.block.iter_vars[0].var
    n = gather_template.params[1]

    def load(node):
        return tirx.BufferLoad(node.source, [index(v, n)]) if node.source.name == "a" else node

    return tvm_ffi.structural_map(gather_template, (tvm.ir.expr.TensorLoad, load)), v, n


INDEX_CASES = {  # name -> (index of v in [0, 12) and a symbolic n, uses n)
    "mod_of_mod_plus_1": (lambda v, n: floormod(v, 2) * 2 + floormod(floormod(v, 2) + 1, 2), False),
    "div_of_mod_plus_1": (lambda v, n: floordiv(floormod(v, 2) + 1, 2) * 8 + floormod(v, 4), False),
    "unravel_offset_3": (lambda v, n: floordiv(v + 3, 4) * 4 + floormod(v + 3, 4), False),
    "nested_split": (lambda v, n: floormod(floordiv(v, 2) + 1, 3) * 6 + floormod(floordiv(v, 2), 3), False),
    "negative_offset": (lambda v, n: floordiv(v + 9 - 2 * 5, 3) + 1 + floormod(v - 1, 3) * 4, False),
    "offset_above_divisor": (lambda v, n: floormod(floormod(v, 3) + 7, 3) + floormod(v, 3) * 3, False),
    "offset_5_over_4": (lambda v, n: floormod(floormod(v, 4) + 5, 4) * 2 + floordiv(v, 4), False),
    "symbolic_offset": (lambda v, n: floormod(floormod(v, 2) + n, 2) + floormod(v, 2) * 2, True),
}


@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_rewritten_indices_equal_the_originals_over_the_whole_domain(name):
    index, symbolic = INDEX_CASES[name]
    func, v, n = _index_case(index)
    fixed = avoid_iter_map_padding(func)
    assert not fixed.same_as(func)
    ((old,),), ((new,),) = ([load.indices for load in _loads_of(f, "a")] for f in (func, fixed))
    for n_value in range(-3, 6) if symbolic else [0]:
        env = {n: n_value} if symbolic else {}
        assert [_value(new, {v: x, **env}) for x in range(12)] == [_value(old, {v: x, **env}) for x in range(12)]
    iterators = _Iterators(fixed)
    assert not any(needs_iter_map_padding(d, iterators) for d in _divisions(new))


def test_rewritten_kernels_compute_what_the_originals_mean():
    a = np.arange(64, dtype="int32") * 3 - 7
    for name, (index, symbolic) in INDEX_CASES.items():
        n_value = 3
        func, v, n = _index_case(index)
        expected = np.array([a[_value(index(v, n), {v: x, n: n_value})] for x in range(12)], "int32")
        module = tvm.compile(tvm.IRModule({"main": avoid_iter_map_padding(func)}), target="llvm")
        out = tvm.runtime.tensor(np.zeros(12, "int32"))
        module["main"](tvm.runtime.tensor(a), n_value, out)
        assert np.array_equal(out.numpy(), expected), name


def test_an_index_simplifying_to_no_division_is_only_simplified():
    """A division padded as written but not once simplified in the iterators' ranges (v % 4 + 2 never
    reaches 8: a slice at an offset of a reshape, within one row): no select, no division left."""
    func, v, n = _index_case(
        lambda v, n: floordiv(floormod(v, 4) + 2, 8) * 16 + floormod(floormod(v, 4) + 2, 8) + floordiv(v, 4) * 8
    )
    fixed = avoid_iter_map_padding(func)
    ((old,),), ((new,),) = ([load.indices for load in _loads_of(f, "a")] for f in (func, fixed))
    assert "Select" not in new.script() and not any(isinstance(d.a, tirx.Add) for d in _divisions(new))
    assert [_value(new, {v: x}) for x in range(12)] == [_value(old, {v: x}) for x in range(12)]


def test_store_indices_and_regions_are_rewritten_values_are_not():
    fixed = avoid_iter_map_padding(padded_store)
    block = fixed.body.block.body.body.block
    store = block.body
    assert isinstance(store, tirx.BufferStore)
    assert not store.indices[0].same_as(padded_store.body.block.body.body.block.body.indices[0])
    assert tvm_ffi.structural_equal(block.writes[0].region[0].min, store.indices[0])
    value_divisions = _divisions(store.value)
    assert value_divisions and all(isinstance(d.a, tirx.Add) for d in value_divisions)  # (v + 1) % 2 kept
    a = np.array([5, 6, 7, 8], "int32")
    expected = np.zeros(4, "int32")
    for v in range(4):
        expected[v // 2 * 2 + (v % 2 + 1) % 2] = a[v] * 10 + (v + 1) % 2
    assert np.array_equal(_run(fixed, a, out_shape=(4,)), expected)


def _fused(func):
    """The kernel with producers inlined and the output's loops fused (as the default schedule does)."""
    sch = tvm.s_tir.Schedule(func)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    for block in blocks[:-1]:
        sch.compute_inline(block)
    sch.fuse(*sch.get_loops(blocks[-1]))
    return sch.mod["main"]


def test_kernels_without_a_padded_division_are_returned_unchanged():
    x = te.placeholder((2, 3, 4), "float32", name="x")
    plain_reshape_transpose = topi.transpose(topi.reshape(x, (6, 4)), (1, 0))
    reshaped_slice = topi.reshape(topi.strided_slice(x, [0, 1, 0], [2, 3, 4]), (4, 4))  # offset after the divisions
    offset_without_division = topi.strided_slice(x, [1, 1, 1], [2, 3, 4])
    i = te.placeholder((12,), "int32", name="i")
    integer_mod_of_values = te.compute((12,), lambda v: floormod(i[v] + 1, 3), name="m")
    kernels = [
        te.create_prim_func([x, plain_reshape_transpose]),
        te.create_prim_func([x, reshaped_slice]),
        te.create_prim_func([x, offset_without_division]),
        te.create_prim_func([i, integer_mod_of_values]),
    ]
    for func in kernels + [_fused(f) for f in kernels]:
        assert avoid_iter_map_padding(func).same_as(func), func.script()


def test_a_reshaped_slice_at_an_offset_is_rewritten_once_scheduled():
    x = te.placeholder((1, 2, 2), "int32", name="x")
    z = te.placeholder((5, 4, 4), "int32", name="z")
    out = topi.strided_slice(topi.add(topi.reshape(x, (1, 4)), z), [2, 0, 1], [3, 2, 3])
    func = _fused(te.create_prim_func([x, z, out]))
    fixed = avoid_iter_map_padding(func)
    assert not fixed.same_as(func)
    p = np.array([[[4, -2], [4, 1]]], dtype="int32")
    zeros = np.zeros((5, 4, 4), "int32")
    assert np.array_equal(_run(fixed, p, zeros, out_shape=(1, 2, 2)), (p.reshape(1, 4) + zeros)[2:3, 0:2, 1:3])


# ---------------------------------------------------------------------------- Relay programs, native backends
def _program(params: str, body: str) -> str:
    return f'#[version = "0.0.5"]\ndef @main({params}) {{ {body} }}'


RELAY_CASES = {  # name -> (parameters, body, argument shape, dtype); all but the last went wrong without the fix
    "fuzz_seed_122307": (
        "%p: Tensor[(1, 2, 2), int32]",
        'strided_slice(add(reshape(%p, newshape=[1, 4]), zeros(shape=[5, 4, 4], dtype="int32")),'
        " begin=[2, 0, 1], end=[3, 2, 3], strides=[1, 1, 1])",
        (1, 2, 2),
        "int32",
    ),
    "float32": (
        "%p: Tensor[(1, 2, 2), float32]",
        'strided_slice(add(reshape(%p, newshape=[1, 4]), zeros(shape=[5, 4, 4], dtype="float32")),'
        " begin=[2, 0, 1], end=[3, 2, 3], strides=[1, 1, 1])",
        (1, 2, 2),
        "float32",
    ),
    "flat_reshape_offset_rows": (
        "%p: Tensor[(1, 2, 2), int32]",
        'strided_slice(add(reshape(%p, newshape=[4]), zeros(shape=[3, 4], dtype="int32")),'
        " begin=[1, 1], end=[3, 3], strides=[1, 1])",
        (1, 2, 2),
        "int32",
    ),
    "int64_2x2": (
        "%p: Tensor[(2, 2), int64]",
        'strided_slice(add(reshape(%p, newshape=[4]), zeros(shape=[3, 4], dtype="int64")),'
        " begin=[0, 1], end=[3, 3], strides=[1, 1])",
        (2, 2),
        "int64",
    ),
    "float64_multiply": (
        "%p: Tensor[(2, 2), float64]",
        'strided_slice(multiply(reshape(%p, newshape=[1, 4]), ones(shape=[4, 4, 4], dtype="float64")),'
        " begin=[1, 0, 1], end=[3, 2, 3], strides=[1, 1, 1])",
        (2, 2),
        "float64",
    ),
    "offset_2_of_3": (
        "%p: Tensor[(1, 3, 3), int32]",
        'strided_slice(add(reshape(%p, newshape=[9]), zeros(shape=[2, 9], dtype="int32")),'
        " begin=[0, 2], end=[2, 5], strides=[1, 1])",
        (1, 3, 3),
        "int32",
    ),
}


@pytest.mark.skipif(not HAS_GXX, reason="needs g++")
@pytest.mark.parametrize("backend", ["cpp", "tir"])
@pytest.mark.parametrize("name", list(RELAY_CASES))
def test_reshaped_slices_agree_with_the_interpreter(name, backend):
    params, body, shape, dtype = RELAY_CASES[name]
    mod = relay.parse(_program(params, body))
    arg = (np.arange(np.prod(shape)).reshape(shape) * 3 - 5).astype(dtype)
    if name in ("fuzz_seed_122307", "float32"):
        arg = np.array([[[4, -2], [4, 1]]], dtype=dtype)
    expected = transpile.compile(mod, backend="interpreter")(arg)
    got = transpile.compile(mod, backend=backend)(arg)
    assert got.dtype == expected.dtype and np.array_equal(got, expected), (got, expected)
