"""The whole normalization pipeline (Relay → verified LIR): every Prelude function, an MLP, stages,
options, debug verification, and every corpus module that type-checks (whole models included)."""

from __future__ import annotations

import time

import numpy as np
import pytest

import transpile.relay as relay
from transpile.lir import LIRError, Program, atoms_of, iter_lets, verify
from transpile.lir.types import AdtT, TensorType
from transpile.pipeline import PipelineOptions, lower_to_lir, pipeline_stages
from transpile.relay.op.registry import lookup
from transpile.runtime import ADTValue, values_equal

from corpus_support import load, records
from test_corpus_typecheck import WHOLE_MODELS, operators_of
from test_pass_closure import CTOR_AS_VALUE, CURRY, ESCAPING, GLOBAL_AS_VALUE
from test_pass_lower import REFS_SRC, SUM_SRC, f32, i32, list_value, run_lir

PRELUDE_MAIN = """#[version = "0.0.5"]
def @main(%xs: List[Tensor[(), int32]]) {
  let %inc = fn (%x: Tensor[(), int32]) -> Tensor[(), int32] { %x + 1 };
  let %plus = fn (%a: Tensor[(), int32], %b: Tensor[(), int32]) -> Tensor[(), int32] { %a + %b };
  let %minus = fn (%a: Tensor[(), int32], %b: Tensor[(), int32]) -> Tensor[(), int32] { %a - %b };
  let %step = fn (%a: Tensor[(), int32], %x: Tensor[(), int32]) -> (Tensor[(), int32], Tensor[(), int32]) {
    (%a + %x, %a * %x)
  };
  let %countdown = fn (%n: Tensor[(), int32]) -> Option[(Tensor[(), int32], Tensor[(), int32])] {
    if (%n > 0) { Some((%n - 1, %n)) } else { None }
  };
  let %ys = @map(%inc, %xs);
  let %tree = Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Nil), Nil)));
  let %two = succ(succ(zero));
  (
    %ys,
    @foldl(%plus, 0, %ys),
    @foldr(%minus, 0, %xs),
    @foldr1(%minus, %xs),
    @sum(%xs),
    @concat(%xs, %ys),
    @filter(fn (%x: Tensor[(), int32]) -> Tensor[(), bool] { %x > 1 }, %xs),
    @zip(%xs, %ys),
    @rev(%xs),
    @length(%ys),
    (@hd(%xs), @tl(%xs), @nth(%xs, 1), @update(%xs, 0, 9)),
    @map_accuml(%step, 0, %xs),
    @map_accumr(%step, 0, %xs),
    @unfoldr(%countdown, 3),
    @unfoldl(%countdown, 3),
    @size(@tmap(%inc, %tree)),
    @tmap(%inc, %tree),
    @iterate(%inc, 3)(10),
    @compose(%inc, %inc)(0),
    @flip(%minus)(1, 5),
    @id(%xs),
    @nat_add(%two, succ(zero)),
    @nat_double(%two),
    @nat_nth(%xs, %two),
    @nat_update(%xs, succ(zero), 7),
    @nat_iterate(%inc, %two)(5)
  )
}
"""


def ints(*values):
    return list_value([i32(v) for v in values])


def nat(n):
    value = ADTValue("zero")
    for _ in range(n):
        value = ADTValue("succ", (value,))
    return value


def leaf(v):
    return ADTValue("Rose", (i32(v), list_value([])))


# Hand-computed for xs = [1, 2, 3].
PRELUDE_EXPECTED = (
    ints(2, 3, 4),
    i32(9),
    i32(2),  # 1 - (2 - (3 - 0))
    i32(2),  # 1 - (2 - 3)
    i32(6),
    ints(1, 2, 3, 2, 3, 4),
    ints(2, 3),
    list_value([(i32(1), i32(2)), (i32(2), i32(3)), (i32(3), i32(4))]),
    ints(3, 2, 1),
    i32(3),
    (i32(1), ints(2, 3), i32(2), ints(9, 2, 3)),
    (i32(6), ints(9, 2, 0)),  # from the left, each output consed on the front
    (i32(6), ints(5, 6, 0)),  # from the right
    ints(3, 2, 1),
    ints(1, 2, 3),
    i32(3),
    ADTValue("Rose", (i32(2), list_value([leaf(3), leaf(4)]))),
    i32(13),
    i32(2),
    i32(4),  # minus(5, 1)
    ints(1, 2, 3),
    nat(3),
    nat(4),
    i32(3),
    ints(1, 7, 3),
    i32(7),
)


def prelude_module():
    mod = relay.IRModule()
    relay.Prelude(mod)
    return relay.parse(PRELUDE_MAIN, init_module=mod)


@pytest.fixture(scope="module")
def prelude_program() -> Program:
    return lower_to_lir(prelude_module(), verify=True)


def test_every_prelude_function_lowers_verifies_and_computes(prelude_program):
    relay_names = {f.relay_name for f in prelude_program.functions}
    from transpile.relay.prelude import PRELUDE_FUNCTIONS

    # Polymorphic ones are specialized by monomorphization (`map__int32__int32`).
    missing = [f for f in PRELUDE_FUNCTIONS if not any(n == f or n.startswith(f + "__") for n in relay_names)]
    assert missing == []
    assert {a.name for a in prelude_program.adts} >= {"List_int32", "Option_Tuple_int32_int32", "Tree_int32", "nat"}
    result = run_lir(prelude_program, ints(1, 2, 3))
    assert len(result) == len(PRELUDE_EXPECTED)
    for index, (got, want) in enumerate(zip(result, PRELUDE_EXPECTED)):
        assert values_equal(got, want), f"field {index}: {got!r} != {want!r}"


def test_prelude_program_on_the_python_backend(prelude_program):
    python = pytest.importorskip("transpile.backends.python")
    run = python.PythonBackend().build(prelude_program).load()
    result = run(ints(1, 2, 3))
    for index, (got, want) in enumerate(zip(result, PRELUDE_EXPECTED)):
        assert values_equal(got, want), f"field {index}: {got!r} != {want!r}"


def test_prelude_tail_calls_are_marked(prelude_program):
    text = str(prelude_program)
    foldl = text[text.index("fn @foldl__") :].split("\n}\n")[0]
    assert "tailcall @foldl__" in foldl
    map_ = text[text.index("fn @map__") :].split("\n}\n")[0]
    assert "tailcall @map__" not in map_ and "call @map__" in map_


def mlp_module():
    x = relay.var("x", shape=(1, 4))
    w1, b1 = relay.var("w1", shape=(8, 4)), relay.var("b1", shape=(8,))
    w2 = relay.const(np.linspace(-1, 1, 24, dtype="float32").reshape(3, 8))
    b2 = relay.const(np.array([0.5, -0.5, 0.0], "float32"))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w1), b1))
    out = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(h, w2), b2))
    return relay.IRModule.from_expr(relay.Function([x, w1, b1], out)), w2.data, b2.data


def test_mlp_through_the_whole_pipeline():
    mod, w2, b2 = mlp_module()
    program = lower_to_lir(mod, verify=True)
    assert program.kernels and all(k.params for k in program.kernels)
    assert [c.type for c in program.constants] == [TensorType((3, 8), "float32"), TensorType((3,), "float32")]
    # CanonicalizeOps turned bias_add into add; opt_level=0 compiles the program as written.
    assert "fused_dense_add_relu" in {k.name for k in program.kernels}
    unoptimized = lower_to_lir(mod, verify=True, options={"opt_level": 0})
    assert "fused_dense_bias_add_relu" in {k.name for k in unoptimized.kernels}
    rng = np.random.default_rng(1)
    x, w1, b1 = (rng.standard_normal(s).astype("float32") for s in ((1, 4), (8, 4), (8,)))
    logits = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(run_lir(program, x, w1, b1), expected, rtol=1e-5)


def test_pipeline_stages_and_options():
    mod, _, _ = mlp_module()
    stages = pipeline_stages(mod, verify=True)
    assert list(stages) == [
        "input",
        "optimized",
        "typed",
        "monomorphized",
        "anf",
        "matches_compiled",
        "fused",
        "lowered",
        "tail_marked",
    ]
    assert isinstance(stages["lowered"], Program) and isinstance(stages["fused"], relay.IRModule)
    unfused = pipeline_stages(mod, options={"fuse": False, "opt_level": 0}, verify=True)
    assert "fused" not in unfused and "optimized" not in unfused
    ops = sorted(k.name for k in unfused["tail_marked"].kernels)
    assert ops == ["fused_bias_add", "fused_bias_add_1", "fused_dense", "fused_dense_1", "fused_relu", "fused_softmax"]
    assert str(lower_to_lir(mod, options=PipelineOptions(fuse=False, opt_level=0), verify=True)) == str(
        unfused["tail_marked"]
    )


def test_a_relay_function_is_accepted_as_main():
    x = relay.var("x", shape=(2,))
    program = lower_to_lir(relay.Function([x], relay.add(x, x)), verify=True)
    assert program.entry == "main" and [p.type for p in program.entry_function.params] == [TensorType((2,), "float32")]


def test_debug_environment_variable_turns_verification_on(monkeypatch):
    import transpile.pipeline as pipeline

    calls = []
    monkeypatch.setattr("transpile.lir.verify", lambda program: calls.append(program))
    mod, _, _ = mlp_module()
    monkeypatch.delenv("TRANSPILE_DEBUG", raising=False)
    lower_to_lir(mod)
    assert calls == [] and not pipeline.debug_enabled()
    monkeypatch.setenv("TRANSPILE_DEBUG", "1")
    program = lower_to_lir(mod)
    assert len(calls) == 2 and calls[-1] is program  # after lowering and after tail-call marking
    lower_to_lir(mod, verify=False)
    assert len(calls) == 2


def test_verification_failure_is_reported(monkeypatch):
    # A lowering bug must surface as an LIRError naming the problem, not as a wrong program.
    import dataclasses

    import transpile.passes.lower as lower_module

    real = lower_module.lower

    def broken(mod, entry="main"):
        program = real(mod, entry)
        main = program.entry_function
        return dataclasses.replace(
            program,
            functions=tuple(dataclasses.replace(f, ret=AdtT("Nope")) if f is main else f for f in program.functions),
        )

    monkeypatch.setattr(lower_module, "lower", broken)
    mod, _, _ = mlp_module()
    with pytest.raises(LIRError, match="unknown ADT Nope"):
        lower_to_lir(mod, verify=True)


# ---------------------------------------------------------------- the corpus

# Programs the pipeline cannot lower, with the reason (each is asserted to fail that way).
KNOWN_LIMITS: dict[str, str] = {}


CORPUS_MODULES = [pytest.param(record, id=record["file"]) for record in records("module", "ok")]


def _typed_corpus_module(record):
    try:
        mod = load(record)
    except LookupError as why:
        pytest.skip(str(why))
    unknown = sorted(n for n in operators_of(mod) if lookup(n) is None)
    if unknown:
        pytest.skip(f"uses operators outside the registry: {', '.join(unknown)}")
    if not list(mod.functions.items()):
        pytest.skip("no functions")
    return relay.transform.InferType()(mod)


def _entry_of(mod) -> str:
    names = [gv.name_hint for gv, _ in mod.functions.items()]
    return "main" if "main" in names else names[0]


@pytest.mark.parametrize("record", CORPUS_MODULES)
def test_corpus_module_lowers_and_verifies(record):
    mod = _typed_corpus_module(record)
    entry = _entry_of(mod)
    if mod[entry].type_params:
        pytest.skip(f"the entry @{entry} is polymorphic: there is no single program to lower")
    known = KNOWN_LIMITS.get(record["file"])
    if known is not None:
        with pytest.raises(Exception) as info:
            lower_to_lir(mod, entry, verify=True)
        assert known in str(info.value)
        return
    program = lower_to_lir(mod, entry, verify=True)
    verify(program)
    assert program.entry_function.relay_name == entry


@pytest.mark.parametrize("name", ["menangerie__1.relay", "menangerie__9.relay", "menangerie__7.relay"])
def test_whole_models_lower_with_kernels_and_hoisted_weights(name):
    record = next(r for r in records("module", "ok") if r["file"] == name)
    mod = relay.transform.InferType()(load(record))
    start = time.perf_counter()
    program = lower_to_lir(mod, verify=True)
    elapsed = time.perf_counter() - start
    assert elapsed < 30, f"{WHOLE_MODELS[name]} took {elapsed:.1f}s"
    main = program.entry_function
    assert [p.type for p in main.params] == [mod["main"].params[0].checked_type] + [
        p.checked_type for p in mod["main"].params[1:]
    ]
    assert main.ret == mod["main"].checked_type.ret_type
    assert len(program.kernels) > 5 and len(program.constants) > 5
    # Every weight is a hoisted constant (verify rejects non-scalar constants in kernel bodies),
    # each used by some statement.
    used = {a.name for f in program.functions for s in iter_lets(f.body) for a in atoms_of(s.value)}
    assert {c.name for c in program.constants} <= used


# ---------------------------------------------------------------- semantics on the python backend

PROGRAMS = {
    "curried_closures": ('#[version = "0.0.5"]\n' + CURRY, (i32(1), i32(10)), i32(21)),
    "escaping_letrec": ('#[version = "0.0.5"]\n' + ESCAPING, (i32(4),), (i32(8), i32(21))),
    "global_as_value": ('#[version = "0.0.5"]\n' + GLOBAL_AS_VALUE, (i32(5),), None),
    "constructor_as_value": ('#[version = "0.0.5"]\n' + CTOR_AS_VALUE, (i32(3),), ints(7, 3)),
    "list_sum": (SUM_SRC, (ints(4, 5, -2),), i32(7)),
    "refs_and_tuples": (REFS_SRC, (f32(3.0),), (f32(3.0), f32(6.0), ())),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_programs_after_the_full_pipeline_run_on_both_lir_evaluator_and_python_backend(name):
    src, args, expected = PROGRAMS[name]
    program = lower_to_lir(relay.parse(src), verify=True)
    got = run_lir(program, *args)
    python = pytest.importorskip("transpile.backends.python")
    compiled = python.PythonBackend().build(program).load()(*args)
    if expected is None:  # (a, b, closure): compare the tensors, then call the closures
        assert values_equal(got[:2], (i32(7), i32(9))) and values_equal(compiled[:2], (i32(7), i32(9)))
        assert values_equal(got[2](i32(1)), i32(2)) and values_equal(compiled[2](i32(1)), i32(2))
        return
    assert values_equal(got, expected)
    assert values_equal(compiled, expected)
