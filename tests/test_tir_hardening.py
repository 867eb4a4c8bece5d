"""Issue 12 on the tir backend: results that must equal the interpreter's (items 1, 2, 7, 9) and hostile names (16)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import transpile
from transpile import relay

# ----------------------------------------------------------------------------- helpers


def _flat(value) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flat(item)]
    return [np.asarray(value)]


def _assert_same(got, expected) -> None:
    got, expected = _flat(got), _flat(expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, (g, e)
        np.testing.assert_array_equal(g, e)  # nan equals nan here


def _agrees_with_interpreter(program, args=(), backend="tir", **options):
    """Compiles `program` (text or a relay module/function) and checks it against the interpreter."""
    parse = (lambda: relay.parse(program)) if isinstance(program, str) else (lambda: program)
    expected = transpile.compile(parse(), backend="interpreter")(*args)
    got = transpile.compile(parse(), backend=backend, **options)(*args)
    _assert_same(got, expected)
    return got


# ----------------------------------------------------------------------------- item 2

# The unused tuple of float tensors and the int results shared memory (TVM's StorageRewrite merged
# the allocations); TVM tags each buffer's accesses with a TBAA type of its own, and once LLVM
# inlined the kernels into their caller it took the float stores and int loads for unrelated.
ITEM_2 = """
def @p() -> Tensor[(2, 2), int32] {
  %2 = zeros(shape=[2, 2, 2], dtype="int32");
  %3 = (%0 = zeros(shape=[3], dtype="float32"); %1 = ones(shape=[4, 3], dtype="float32");
        let %v1 = (%0, %1); ones(shape=[2, 2], dtype="int32"));
  %4 = max(%2, axis=[-1]);
  maximum(%3, %4)
}
def @main() -> (Tensor[(2, 2), int32],) { (@p(),) }
"""


@pytest.mark.parametrize("backend", ["tir", "cpp"])
def test_item_2_an_int_result_never_holds_the_bits_of_a_dead_float_tensor(backend):
    (result,) = _agrees_with_interpreter(ITEM_2, backend=backend, opt_level=0)
    assert result.tolist() == [[1, 1], [1, 1]]


def test_item_2_kernels_inlined_into_a_caller_reusing_its_arena_compute_in_order():
    # Every kernel is called directly (inlined by LLVM) and the arena's first slot is written by a
    # kernel after two others read it: reordering across those reads shows as a wrong softmax.
    src = """
def @main(%x: Tensor[(8, 8), float32], %y: Tensor[(8, 8), float32]) -> Tensor[(8, 8), float32] {
  %0 = nn.relu(multiply(add(%x, %y), %x));
  %1 = exp(subtract(%0, sum(%0, axis=[1], keepdims=True)));
  %2 = divide(%1, sum(%1, axis=[1], keepdims=True));
  add(%2, transpose(%2))
}"""
    rng = np.random.default_rng(12)
    x, y = (rng.standard_normal((8, 8)).astype("float32") for _ in range(2))
    got = transpile.compile(relay.parse(src), backend="tir")(x, y)
    e = np.exp(np.maximum((x + y) * x, 0) - np.maximum((x + y) * x, 0).sum(1, keepdims=True))
    soft = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(got, soft + soft.T, rtol=1e-5)


def test_item_2_the_callers_unit_is_compiled_without_type_based_alias_analysis():
    from transpile.backends.tir.build import _callers_target
    from transpile.kernels.target import host_target

    target = _callers_target(host_target())
    assert "-enable-tbaa:bool=0" in [str(o) for o in target.attrs["cl-opt"]]
    assert str(target.attrs["mcpu"]) == str(host_target().attrs["mcpu"])


# ----------------------------------------------------------------------------- item 9

BOOLS = np.array([[True, False, True], [False, False, True]])
FLOATS = np.array([[0, 1.5, -2], [3, np.nan, 0]], "float32")
INTS = np.array([[1, -2, 0], [5, 7, -1]], "int32")

# Each was a TVM "dtype mismatch on BufferStore: buffer's dtype is T.bool ... RHS's dtype is
# T.int8" (StorageRewrite merged a bool allocation with another and retyped its accesses), or is
# a bool flowing through every place the backend touches bools itself: inputs, outputs, tuples,
# constants, literals, if conditions, loop state, direct (scalar) functions.
BOOL_PROGRAMS = {
    "copy_next_to_an_unused_planned_pair": (
        """def @main(%b: Tensor[(2, 3), bool], %i: Tensor[(2, 3), int32]) -> (Tensor[(2, 3), bool], Tensor[(2, 3), bool]) {
  let %v1 = zeros_like(%i);
  let %v2 = expand_dims(%b, axis=0);
  let %v3 = copy(%b);
  (%v3, %b)
}""",
        (BOOLS, INTS),
    ),
    "issue_example_float_concat_and_bool_ones": (
        """def @f(%x: Tensor[(2, 3), float32]) -> (Tensor[(4, 3), float32], Tensor[(2, 3), bool]) {
  (concatenate((%x, %x), axis=0), ones(shape=[2, 3], dtype="bool"))
}
def @main(%x: Tensor[(2, 3), float32]) -> (Tensor[(4, 3), float32], Tensor[(2, 3), bool]) { @f(%x) }""",
        (FLOATS,),
    ),
    "fuzz_seed_6_expand_dims_of_bool_beside_others": (
        """def @main(%x: Tensor[(2, 3), float32], %b: Tensor[(2, 3), bool]) -> (Tensor[(1, 2, 3), bool], Tensor[(3, 5), int32], Tensor[(2, 3), bool], Tensor[(2, 3), float32]) {
  let %v1 = sum(%x, axis=[0]);
  let %v2 = zeros(shape=[3, 5], dtype="int32");
  let %v3 = expand_dims(%x, axis=0);
  let %v4 = expand_dims(%b, axis=0);
  (%v4, %v2, %b, %x)
}""",
        (FLOATS, BOOLS),
    ),
    "fuzz_seed_7_comparison_returned_from_a_function": (
        """def @f(%x: Tensor[(2, 3), float32], %b: Tensor[(2, 3), bool]) -> (Tensor[(2, 3), float32], Tensor[(2, 3), bool]) {
  let %v1 = logical_not(%b);
  let %v2 = copy(%x);
  let %v3 = greater(%v2, %v2);
  (%x, %v3)
}
def @main(%x: Tensor[(2, 3), float32], %b: Tensor[(2, 3), bool]) -> (Tensor[(2, 3), float32], Tensor[(2, 3), bool]) { @f(%x, %b) }""",
        (FLOATS, BOOLS),
    ),
    "bool_input_returned_twice_and_a_bool_literal": (
        """def @main(%b: Tensor[(2, 3), bool], %c: bool) -> (Tensor[(2, 3), bool], Tensor[(2, 3), bool], bool, bool, bool) {
  (%b, %b, %c, True, logical_not(%c))
}""",
        (BOOLS, np.array(False)),
    ),
    "if_on_a_computed_bool_choosing_bool_tuples": (
        """def @main(%b: Tensor[(2, 3), bool], %x: Tensor[(2, 3), float32]) -> (Tensor[(2, 3), bool], Tensor[(2, 3), float32]) {
  let %c = all(%b);
  if (logical_not(%c)) { (logical_not(%b), %x) } else { (%b, negative(%x)) }
}""",
        (BOOLS, FLOATS),
    ),
    "bool_loop_state_and_scalar_bool_state": (
        """def @loop(%n: int32, %acc: Tensor[(3), bool], %flip: bool) -> (Tensor[(3), bool], bool) {
  if (greater(%n, 0)) { @loop(subtract(%n, 1), logical_not(%acc), logical_not(%flip)) } else { (%acc, %flip) }
}
def @main(%x: Tensor[(3), bool]) -> (Tensor[(3), bool], bool, int32) {
  let %r = @loop(3, %x, False);
  (%r.0, %r.1, 1)
}""",
        (np.array([True, False, True]),),
    ),
    "scalar_only_function_on_bools_called_directly": (
        """def @pick(%c: bool, %a: bool, %b: bool) -> bool {
  if (%c) { logical_and(%a, %b) } else { logical_or(%a, %b) }
}
def @main(%c: bool, %a: bool) -> (bool, bool) { (@pick(%c, %a, False), @pick(logical_not(%c), %a, True)) }""",
        (np.array(True), np.array(True)),
    ),
    "large_bool_tensors_and_reductions": (
        """def @main(%x: Tensor[(40, 40), float32]) -> (Tensor[(40, 40), bool], Tensor[(40), bool], bool, Tensor[(80, 40), float32]) {
  let %b = greater(%x, 2f);
  (logical_and(%b, %b), any(%b, axis=[1]), all(%b), concatenate((%x, %x), axis=0))
}""",
        (np.arange(1600, dtype="float32").reshape(40, 40) % 5,),
    ),
    "bool_tensor_split_and_where": (
        """def @main(%b: Tensor[(4, 3), bool], %x: Tensor[(2, 3), float32]) -> (Tensor[(2, 3), bool], Tensor[(2, 3), float32], Tensor[(2, 3), int8]) {
  let %s = split(%b, indices_or_sections=2);
  (%s.0, where(%s.1, %x, negative(%x)), cast(%s.1, dtype="int8"))
}""",
        (np.arange(12).reshape(4, 3) % 3 == 0, FLOATS),
    ),
}


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("name", sorted(BOOL_PROGRAMS))
def test_item_9_bool_tensors_next_to_other_values(name, opt_level):
    src, args = BOOL_PROGRAMS[name]
    _agrees_with_interpreter(src, args, opt_level=opt_level)


def test_item_9_bool_constants_from_the_weights_blob():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    table = relay.const(np.array([[True, False, True], [False, True, True]]))
    flag = relay.const(np.array(True))
    body = relay.Tuple([relay.concatenate([x, x], 0), table, relay.logical_not(table), flag])
    _agrees_with_interpreter(relay.Function([x], body), (FLOATS,), opt_level=0)


def test_item_9_emitted_bool_handling_reparses_to_the_same_module():
    import tvm

    for name in ("bool_loop_state_and_scalar_bool_state", "scalar_only_function_on_bools_called_directly"):
        text = transpile.emit(relay.parse(BOOL_PROGRAMS[name][0]), backend="tir", opt_level=0)
        module = tvm.script.from_source(text)
        tvm.ir.assert_structural_equal(module, tvm.script.from_source(module.script()))
        assert "T.int8" in text  # bool elements are read and written as bytes


# ----------------------------------------------------------------------------- items 1 and 7 (scalars)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_items_1_and_7_ieee_division_by_zero_in_scalar_and_tensor_kernels(opt_level):
    src = """def @main(%s: float32, %x: Tensor[(3), float32]) -> (float32, float32, float32, float32, float32, Tensor[(3), float32], Tensor[(3), float32]) {
  (divide(1f, 0f), divide(%s, 0f), divide(0f, 0f), divide(0f, %s), floor_mod(%s, 0f),
   divide(zeros(shape=[3], dtype="float32"), %x), divide(%x, zeros(shape=[3], dtype="float32")))
}"""
    args = (np.array(-2, "float32"), np.array([0, np.nan, 2], "float32"))
    got = _agrees_with_interpreter(src, args, opt_level=opt_level)
    assert np.isposinf(got[0]) and np.isneginf(got[1]) and np.isnan(got[2]) and np.isnan(got[4])
    assert np.isnan(got[5][:2]).all() and got[5][2] == 0


def test_item_1_zero_over_a_sum_of_zeros_is_nan_not_dropped():
    src = """def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  add(divide(zeros(shape=[2], dtype="float32"), sum(zeros(shape=[1, 2], dtype="float32"), axis=[0])), %x)
}"""
    got = _agrees_with_interpreter(src, (np.array([1, 2], "float32"),), opt_level=0)
    assert np.isnan(got).all()


# ----------------------------------------------------------------------------- item 16

HOSTILE = [
    "x\n#include <bad>",
    'a"b',
    "c*/d",
    "/*e",
    "é",
    "名前",
    "😀",
    "class",
    "lambda",
    "None",
    "T",
    "I",
    "Module",
    "weights",
    "range",
    "tir_main",
    "fn_g",
    "a-b",
    "a_b",
    "a.b",
    "1abc",
    "x\0y",
    "a b",
    "\\",
    "'",
    "??=",
    "arena",
    "again",
    "p_x",
    "out_0",
]


def test_item_16_hostile_global_names_in_one_module():
    x = relay.var("x", shape=(3,), dtype="float32")
    mod = relay.IRModule()
    body = x
    for i, name in enumerate(HOSTILE):
        p = relay.var(name, shape=(3,), dtype="float32")
        gv = relay.GlobalVar(name)
        mod[gv] = relay.Function([p], relay.add(p, relay.const(np.float32(i + 1))))
        body = relay.Call(gv, [body])
    mod[relay.GlobalVar("main")] = relay.Function([x], body)
    got = _agrees_with_interpreter(mod, (np.zeros(3, "float32"),))
    assert got.tolist() == [sum(range(1, len(HOSTILE) + 1))] * 3


@pytest.mark.parametrize("name", ["x\n#include <bad>", "😀", "x\0y", "range"])
def test_item_16_hostile_entry_and_variable_names(name):
    a, b = relay.var(name, shape=(2,), dtype="float32"), relay.var(name, shape=(2,), dtype="bool")
    v = relay.var(name, shape=(2,), dtype="float32")
    body = relay.Let(v, relay.multiply(a, a), relay.Tuple([v, a, relay.logical_not(b)]))
    mod = relay.IRModule()
    mod[relay.GlobalVar(name)] = relay.Function([a, b], body)
    args = (np.array([1, 2], "float32"), np.array([True, False]))
    expected = transpile.compile(mod, backend="interpreter", entry=name)(*args)
    got = transpile.compile(mod, backend="tir", entry=name)(*args)
    _assert_same(got, expected)


def test_item_16_parameters_named_like_the_pointers_of_others():
    # A scalar-only function becomes a private PrimFunc taking `<buffer>_ptr` pointers: parameters
    # `a` and `a_ptr` gave the buffer `p_a_ptr` and the pointer of `p_a` the same name.
    src = """def @g(%a: int32, %a_ptr: int32, %out_0: int32, %out_0_ptr: bool) -> int32 {
  if (%out_0_ptr) { add(%a, %a_ptr) } else { subtract(%out_0, %a) }
}
def @main(%x: int32, %c: bool) -> (int32, int32) { (@g(%x, 5, 7, %c), @g(%x, 5, 7, logical_not(%c))) }"""
    got = _agrees_with_interpreter(src, (np.array(3, "int32"), np.array(True)))
    assert [int(v) for v in got] == [8, 4]


def test_item_16_c_string_literals_hold_any_name_byte_for_byte(tmp_path):
    from transpile.backends import native
    from transpile.backends.tir.build import _c_string

    names = [n for n in HOSTILE if "\0" not in n] + ["\t\x7f\x01", "\\x41", "%s%n"]
    lines = ["#include <stdio.h>", "int main(void) {"]
    lines += [f"  fputs({_c_string(n)}, stdout); fputc(0, stdout);" for n in names]
    lines += ["  return 0;", "}"]
    source = tmp_path / "names.c"
    source.write_text("\n".join(lines) + "\n", encoding="ascii")
    binary = tmp_path / "names"
    subprocess.run([native.cxx(), "-x", "c", str(source), "-o", str(binary)], check=True, capture_output=True)
    out = subprocess.run([str(binary)], check=True, capture_output=True).stdout
    assert out.split(b"\0")[:-1] == [n.encode("utf-8") for n in names]
