"""The differential fuzzer (transpile.testing.fuzz): its generator, batching, classification and shrinker,
a fixed small budget of random programs on every installed backend, and the replay of every program
the fuzzer ever found failing (tests/fuzz_regressions/)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from transpile import EvaluationError, UnsupportedFeatureError
from transpile.testing.fuzz.batch import batch_text, parse_program
from transpile.testing.fuzz.differential import BackendRunner, differential_batch, run_reference
from transpile.testing.fuzz.generator import GeneratedProgram, generate_program
from transpile.testing.fuzz.outcome import FAILURES, Outcome, classify
from transpile.testing.fuzz.report import load_inputs
from transpile.testing.fuzz.shrink import shrink

REGRESSIONS = Path(__file__).parent / "fuzz_regressions"
NATIVE = ["cpp", "tir"]
HAS_GXX = shutil.which("g++") is not None

# Every construct issue 12 asks the generator to cover, as the feature names it records.
REQUIRED_FEATURES = {
    "param:float32", "param:float64", "param:int32", "param:int64", "param:bool", "scalar", "tensor", "dynamic",
    "edge_values", "let", "if", "tuple", "tuple_proj", "tuple_result", "broadcast", "call",
    "op:add", "op:multiply", "op:divide", "op:maximum", "op:exp", "op:negative", "op:where", "op:cast",
    "op:less", "op:equal", "op:isnan", "op:sum", "op:max", "op:mean", "op:argmax", "op:all",
    "op:reshape", "op:transpose", "op:concatenate", "op:take", "op:strided_slice", "op:expand_dims", "op:squeeze",
    "op:nn.dense", "op:nn.conv2d", "op:nn.max_pool2d", "op:nn.avg_pool2d", "op:nn.softmax",
    "recursion:tail", "recursion:nontail", "recursion:closure",
    "closure", "closure:capture", "closure:passed", "closure:returned", "closure:call",
    "ref", "ref_write", "closure:ref_write", "list", "option", "match", "match:nested", "map", "foldl",
}  # fmt: skip


def _same_arrays(a, b) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


# ---------------------------------------------------------------------------------------- the generator
def test_generated_programs_type_check():
    for seed in range(150):
        program = generate_program(seed)
        mod = parse_program(program.text, program.uses_prelude)
        main = mod["main"]
        assert len(main.params) == len(program.inputs) == len(program.param_types), seed
        for param, value in zip(main.params, program.inputs):
            annotated = param.type_annotation
            assert value.dtype.name == annotated.dtype, seed
            assert len(value.shape) == len(annotated.shape), seed


def test_generator_is_deterministic_per_seed():
    for seed in (0, 7, 123, 9999):
        first, second = generate_program(seed), generate_program(seed)
        assert first.text == second.text
        assert all(_same_arrays(a, b) for a, b in zip(first.inputs, second.inputs))
    assert generate_program(1).text != generate_program(2).text


def test_generator_covers_every_construct():
    seen = set()
    has_unknown_dim = has_empty_input = has_nan_input = False
    for seed in range(600):
        program = generate_program(seed)
        seen |= program.features
        has_unknown_dim |= "?" in program.text
        for value in program.inputs:
            has_empty_input |= value.size == 0
            has_nan_input |= value.dtype.kind == "f" and bool(np.isnan(value).any())
    assert REQUIRED_FEATURES <= seen, sorted(REQUIRED_FEATURES - seen)
    assert has_unknown_dim and has_empty_input and has_nan_input


def test_batch_gives_each_program_its_own_result():
    programs = [generate_program(seed) for seed in (3, 4, 5)]
    mod = parse_program(batch_text(programs))
    assert len(mod["main"].params) == sum(len(p.inputs) for p in programs)
    assert len(mod["main"].checked_type.ret_type.fields) == 3
    together = run_reference(BackendRunner("interpreter"), programs)
    for program, outcome in zip(programs, together):
        alone = BackendRunner("interpreter").run_one(program)
        assert classify(alone, outcome)[0] in ("match", "agree_error"), program.seed


# ---------------------------------------------------------------------------------------- classification
def test_classification_rules():
    value = Outcome(value=np.array(1, "float32"))
    evaluation = Outcome(error=EvaluationError("recursion too deep"))
    internal = Outcome(error=KeyError("x"))
    assert classify(value, Outcome(value=np.array(1, "float32")))[0] == "match"
    assert classify(value, Outcome(value=np.array(2, "float32")))[0] == "mismatch"
    assert classify(value, Outcome(value=np.array(1, "float64")))[0] == "mismatch"  # dtypes must agree too
    assert (
        classify(Outcome(value=np.array(np.nan, "float32")), Outcome(value=np.array(np.nan, "float32")))[0] == "match"
    )
    assert classify(evaluation, Outcome(error=EvaluationError("index out of range")))[0] == "agree_error"
    assert classify(evaluation, value)[0] == "missing_error"
    assert classify(value, evaluation)[0] == "spurious_error"
    assert classify(value, internal)[0] == "internal_error"
    assert classify(evaluation, internal)[0] == "internal_error"
    assert classify(internal, value)[0] == "reference_error"
    unsupported = Outcome(error=UnsupportedFeatureError("closures", "tir"), stage="compile")
    assert classify(value, unsupported)[0] == "unsupported"
    assert FAILURES >= {"mismatch", "missing_error", "spurious_error", "internal_error"}


def test_tolerance_follows_the_dtypes_a_program_computes_in():
    """A float64 result cast from float32 math is only as exact as float32 (seed 110461: exp of a
    float32 value, one float32 ulp apart between numpy and LLVM, compared at float64 tolerance)."""
    from transpile.testing.fuzz.outcome import program_float_dtypes

    e32 = np.float32(np.e)
    reference = Outcome(value=np.array(e32, "float64"))
    one_ulp_off = Outcome(value=np.array(np.nextafter(e32, np.float32(3)), "float64"))
    cast_from_float32 = 'def @main(%x: float32) -> float64 { cast(exp(%x), dtype="float64") }'
    pure_float64 = 'def @main(%x: float64) -> float64 { exp(%x) }'
    assert classify(reference, one_ulp_off)[0] == "mismatch"
    assert classify(reference, one_ulp_off, pure_float64)[0] == "mismatch"
    assert classify(reference, one_ulp_off, cast_from_float32)[0] == "match"
    assert program_float_dtypes(cast_from_float32) == {"float32", "float64"}
    assert program_float_dtypes("add(%x, 1f)") == program_float_dtypes("add(%x, 2.5)") == {"float32"}
    assert program_float_dtypes("add(%x, 2f64)") == {"float64"}
    assert program_float_dtypes("add(%x, 1i64), %v1.2, %x1") == set()


def _program(text: str, inputs) -> GeneratedProgram:
    return GeneratedProgram(0, text, [], list(inputs), frozenset(), False, ("main",))


def test_a_failing_program_in_a_batch_is_found_alone():
    good = _program('#[version = "0.0.5"]\ndef @main(%x: float32) -> float32 { %x * 2f }\n', [np.float32(3)])
    empty = np.zeros(0, "float32")
    bad = _program(
        '#[version = "0.0.5"]\ndef @main(%x: Tensor[(?), float32]) -> int32 { argmax(%x, axis=[0]) }\n', [empty]
    )
    good.param_types = [relay_type("float32")]
    bad.param_types = [relay_type("float32", unknown=True)]
    outcomes, combined = BackendRunner("python").run_batch([good, bad, good])
    assert [o.is_error for o in outcomes] == [False, True, False]
    assert float(outcomes[0].value) == 6.0 and combined is None


def relay_type(dtype: str, unknown: bool = False):
    from transpile.testing.fuzz.gentypes import Dim, TensorT

    return TensorT(dtype, (Dim(0),) if unknown else ())


def test_shrinker_keeps_the_failure_and_drops_the_rest():
    program = next(p for p in map(generate_program, range(300)) if "nn.dense(" in p.text and len(p.text) > 1500)
    text, inputs = shrink(program.text, program.inputs, lambda t, i: "nn.dense(" in t, max_seconds=60)
    assert "nn.dense(" in text and len(text) < len(program.text) / 2
    parse_program(text)
    assert len(inputs) <= len(program.inputs)


# ---------------------------------------------------------------------------------------- fixed budgets
def _differential(backend: str, seeds, batch_size: int):
    programs = [generate_program(seed) for seed in seeds]
    references = run_reference(BackendRunner("interpreter"), programs)
    results = differential_batch(programs, references, BackendRunner(backend), batch_size)
    failures = [f"seed {r.program.seed}: {r.status} {r.detail[:300]}" for r in results if r.failed]
    return results, failures


def test_random_programs_on_python():
    results, failures = _differential("python", range(40), batch_size=20)
    assert not failures, "\n".join(failures)
    assert sum(r.status == "match" for r in results) >= 30


@pytest.mark.skipif(not HAS_GXX, reason="the cpp backend needs g++")
@pytest.mark.parametrize("backend", NATIVE)
def test_random_programs_on_native_backends(backend):
    results, failures = _differential(backend, range(100, 120), batch_size=20)
    assert not failures, "\n".join(failures)
    assert sum(r.status == "match" for r in results) >= 5


def test_an_error_only_in_dead_code_is_judged_on_the_optimized_module():
    """Seed 1075: `take` from an empty axis in an unused let raises on the interpreter; optimized away
    (pure, as in TVM), the backend's value must equal the interpreter's on the optimized module."""
    program = generate_program(1075)
    references = run_reference(BackendRunner("interpreter"), [program])
    assert references[0].is_error
    [result] = differential_batch([program], references, BackendRunner("python"), 40)
    assert result.status == "dead_error", result.detail
    assert not result.failed


def test_jobs_split_the_seeds_and_merge_the_tallies(tmp_path, capsys):
    """`--jobs 2` runs two workers on disjoint seed ranges; the parent's table counts every program once."""
    from transpile.testing.fuzz.cli import main

    code = main(["differential", "--programs", "6", "--seed", "3", "--backends", "python", "--jobs", "2",
                 "--out", str(tmp_path)])  # fmt: skip
    table = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines() if line.startswith(("interpreter", "python"))}
    assert code == 0, table
    assert sum(map(int, rows["interpreter"][:-1])) == 6
    assert sum(map(int, rows["python"][:-1])) == 6
    assert "6 programs in" in table


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["python", *NATIVE])
def test_random_programs_long(backend):
    """The documented longer run, in the test suite: `python -m transpile.testing.fuzz differential`
    does the same with a summary table and reproductions on disk."""
    results, failures = _differential(backend, range(1000, 1400), batch_size=40)
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------- regressions
def _regression_cases():
    cases = []
    for path in sorted(REGRESSIONS.glob("*.relay")):
        meta_path = path.with_suffix(".json")
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        for backend in meta.get("backends", ["python", *NATIVE]):
            marks = []
            if backend in NATIVE and not HAS_GXX:
                marks.append(pytest.mark.skip(reason="needs g++"))
            reason = meta.get("xfail", {}).get(backend)
            if reason:
                marks.append(pytest.mark.xfail(reason=reason, strict=True))
                if "time_limit" in meta:  # a known hang costs its whole time limit: not in the quick suite
                    marks.append(pytest.mark.slow)
            # A crash (signal) or a hang must fail the test, not end or stall pytest: such files run in a worker.
            isolate = meta.get("time_limit", 600) if meta.get("isolate") else None
            cases.append(pytest.param(path, backend, isolate, marks=marks, id=f"{path.stem}-{backend}"))
    return cases


@pytest.mark.parametrize("path, backend, isolate", _regression_cases())
def test_fuzz_regression(path, backend, isolate):
    """Every program the fuzzer found failing: the backend agrees with the interpreter on it."""
    inputs = load_inputs(path.with_suffix(".npz")) if path.with_suffix(".npz").exists() else []
    text = path.read_text()
    reference = BackendRunner("interpreter").run(text, inputs, None)
    runner = BackendRunner(backend, isolate=isolate is not None, time_limit=isolate)
    try:
        outcome = runner.run(text, inputs, None)
    finally:
        if runner.isolated is not None:
            runner.isolated.close()
    status, detail = classify(reference, outcome, text)
    assert status not in FAILURES, f"{status}: {detail}"


def test_isolated_runs_report_hangs_and_keep_values():
    from transpile.testing.fuzz.isolation import IsolatedBackend

    loop = (
        '#[version = "0.0.5"]\n'
        "def @loop(%n: int32) -> int32 { if (%n <= 0) { 0 } else { @loop(%n - 1) } }\n"
        "def @main(%n: int32) -> int32 { @loop(%n) }\n"
    )
    worker = IsolatedBackend("interpreter", time_limit=15)
    try:
        outcome, _ = worker.run(loop, [np.array(3, "int32")], False)
        assert int(outcome.value) == 0
        outcome, _ = worker.run(loop, [np.array(2**31 - 1, "int32")], False)
        assert classify(Outcome(value=np.array(0, "int32")), outcome)[0] == "hang"
        outcome, _ = worker.run(loop, [np.array(1, "int32")], False)  # a fresh worker after the kill
        assert int(outcome.value) == 0
    finally:
        worker.close(kill=True)
