"""Mutation fuzzing of the parser and type checker (transpile.testing.fuzz.mutation): corpus programs
with random token-level damage either parse and type-check or raise a TranspileError with a location."""

from __future__ import annotations

import random

import pytest

from transpile import TranspileError
from transpile.testing.fuzz.mutation import (
    Seed,
    check_source,
    generated_seeds,
    load_corpus_seeds,
    mutate,
    run_mutation_fuzz,
)

# Location-less errors known and tracked (regex of the message -> why). Mutants hitting one are counted
# as "known_gap" in the report, not hidden. None are known today.
KNOWN_LOCATION_GAPS: dict[str, str] = {}

# (text, kind): each must raise a TranspileError with a location; the known gaps are strict xfails.
GAP_EXAMPLES = [
    pytest.param('#[version = "0.0.5"]\ndef @main(%x: float32) -> float32 {\n  add\n}\n', "module", id="bare-operator"),
    pytest.param(
        '#[version = "0.0.5"]\ndef @main(%x: float32) -> float32 {\n  let %y = nn.conv2d;\n  %x\n}\n',
        "module",
        id="bare-operator-let",
    ),
    pytest.param("add(add)", "expr", id="operator-as-argument"),
    pytest.param("let.let(1)", "expr", id="unknown-namespaced-operator-call"),
    pytest.param(
        '#[version = "0.0.5"]\ndef @main(%x: float32) -> float32 {\n  %y\n}\n', "module", id="unknown-variable"
    ),
    pytest.param(
        '#[version = "0.0.5"]\ndef @main(%x: float32) -> int32 {\n  %x\n}\n', "module", id="wrong-return-type"
    ),
    pytest.param(
        '#[version = "0.0.5"]\ndef @main(%x: float32) -> float32 {\n  @nowhere(%x)\n}\n', "module", id="unknown-global"
    ),
    pytest.param(
        '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 3), float32]) {\n  reshape(%x, newshape=[7])\n}\n',
        "module",
        id="bad-reshape",
    ),
]


@pytest.mark.parametrize("text, kind", GAP_EXAMPLES)
def test_errors_have_locations(text, kind):
    with pytest.raises(TranspileError) as info:
        check_source(text, kind)
    assert info.value.span is not None, f"no location: {info.value.message}"


@pytest.mark.parametrize("name", ["add", "nn.conv2d", "qnn.quantize"])
def test_an_operator_name_alone_parses_to_the_operator(name):
    """parse_expr("add") is Op add, as in TVM: an API value, not a program to type-check."""
    from transpile.relay import Op, parse_expr

    assert isinstance(parse_expr(name), Op) and parse_expr(name).name == name
    assert check_source(name, "expr") is None


def test_mutations_are_deterministic_and_change_the_text():
    text = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 3), float32]) {\n  add(%x, 1f)\n}\n'
    first = [mutate(text, random.Random(seed)) for seed in range(50)]
    second = [mutate(text, random.Random(seed)) for seed in range(50)]
    assert first == second
    assert sum(m != text for m in first) >= 45


def test_corpus_and_generated_seeds_are_valid_programs_or_located_errors():
    seeds = load_corpus_seeds()[:80] + generated_seeds(20)
    assert seeds
    for seed in seeds:
        try:
            check_source(seed.text, seed.kind, seed.init, source_name=seed.name)
        except TranspileError as exc:
            assert exc.span is not None, f"{seed.name}: {exc.message}"


def _assert_clean(report):
    problems = report.failures()
    assert not problems, report.summary()
    assert report.counts["located"] > 0 and report.counts["ok"] > 0, report.summary()


def test_mutants_raise_only_located_transpile_errors():
    report = run_mutation_fuzz(300, seed=0, known_gaps=tuple(KNOWN_LOCATION_GAPS))
    _assert_clean(report)


def test_mutants_of_generated_programs():
    report = run_mutation_fuzz(150, seed=1, seeds=generated_seeds(30, seed=500), known_gaps=tuple(KNOWN_LOCATION_GAPS))
    _assert_clean(report)


def test_report_flags_crashes_and_unlocated_errors():
    from transpile.testing.fuzz.mutation import MutationReport

    report = MutationReport(known_gaps=("known",))
    seed = Seed("s", "")
    report.add("crash", seed, "x", "KeyError: 'a'")
    report.add("unlocated", seed, "y", "a known gap")
    assert not report.ok and report.counts["known_gap"] == 1
    assert [kind for kind, _, _ in report.failures()] == ["crash"]


@pytest.mark.slow
def test_ten_thousand_mutants():
    report = run_mutation_fuzz(10000, seed=12, known_gaps=tuple(KNOWN_LOCATION_GAPS))
    _assert_clean(report)
