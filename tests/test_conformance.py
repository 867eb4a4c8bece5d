"""The conformance suite on every registered backend, and checks of the suite itself."""

from __future__ import annotations

import re

import numpy as np
import pytest

from transpile.backends import ALL_FEATURES, CLOSURES, Artifact, backends, registry
from transpile.backends.features import _reachable_globals, required_features
from transpile.backends.interpreter import InterpreterBackend
from transpile.relay.prelude import PRELUDE_FUNCTIONS
from transpile.testing.cases import ALL_CASES, THEMES, by_name
from transpile.testing.compare import assert_values_close
from transpile.testing.runner import run_case, typed_case_module
from transpile.runtime import ADTValue, RefValue

CASE_IDS = [f"{case.theme}-{case.name}" for case in ALL_CASES]


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("case", ALL_CASES, ids=CASE_IDS)
def test_case(backend, case):
    run_case(backend, case)


@pytest.mark.parametrize("case", ALL_CASES, ids=CASE_IDS)
def test_declared_features_match_the_analysis(case):
    assert set(required_features(typed_case_module(case), case.entry)) == set(case.features)


def test_suite_covers_the_required_themes():
    assert len(ALL_CASES) >= 80
    assert set(THEMES) == {"classics", "prelude", "operators", "closures_refs", "adts", "recursion", "models", "errors"}
    assert all(len(cases) >= 4 for cases in THEMES.values())
    assert len({case.name for case in ALL_CASES}) == len(ALL_CASES)
    for feature in ALL_FEATURES:
        assert any(feature in case.features for case in ALL_CASES), feature
    assert any(case.raises for case in ALL_CASES) and any(case.apply for case in ALL_CASES)


def test_every_prelude_function_is_exercised():
    reached = set()
    for case in THEMES["prelude"]:
        mod = typed_case_module(case)
        order, _ = _reachable_globals(mod, mod.get_global_var(case.entry))
        reached |= {gv.name_hint for gv in order}
    assert set(PRELUDE_FUNCTIONS) - reached == set()


def test_deep_tail_recursion_case_is_deep():
    case = by_name("deep_tail_recursion_100000")
    assert case.inputs[0] == 100_000 and re.search(r"@countdown\(%n - 1", case.source)


# ----- the runner's behaviour with deficient backends -------------------------------------------


class _Limited(InterpreterBackend):
    name = "limited"
    capabilities = ALL_FEATURES - {CLOSURES}


class _WrongArtifact(Artifact):
    def load(self):
        return lambda *args: np.zeros(10, dtype="float32")


class _Wrong(InterpreterBackend):
    name = "wrong"

    def build(self, program, entry="main", **options):
        return _WrongArtifact(self.name, entry)


class _Liar(InterpreterBackend):
    """Claims not to support closures but compiles them anyway."""

    name = "liar"
    capabilities = ALL_FEATURES - {CLOSURES}

    def build(self, program, entry="main", **options):
        return super().build(program, entry=entry)


@pytest.fixture
def temporary_backend():
    names = []

    def register(cls):
        registry.register_backend(cls.name, cls, replace=True)
        names.append(cls.name)
        return cls.name

    yield register
    for name in names:
        registry.unregister_backend(name)


def test_case_needing_a_missing_feature_is_skipped_naming_it(temporary_backend):
    name = temporary_backend(_Limited)
    with pytest.raises(pytest.skip.Exception, match="limited lacks closures"):
        run_case(name, by_name("local_recursive_sum"))
    run_case(name, by_name("global_recursive_sum"))


def test_wrong_results_fail(temporary_backend):
    name = temporary_backend(_Wrong)
    with pytest.raises(AssertionError):
        run_case(name, by_name("add"))
    with pytest.raises(AssertionError):
        run_case(name, by_name("identity"))  # right shape and dtype, wrong values
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        run_case(name, by_name("wrong_shape"))


def test_backend_that_does_not_reject_a_missing_feature_fails(monkeypatch, temporary_backend):
    name = temporary_backend(_Liar)
    # The framework's check would reject the program; simulate a framework that forgot to check.
    monkeypatch.setattr("transpile.backends.api.check_supported", lambda *args: None)
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        run_case(name, by_name("local_recursive_sum"))


# ----- the comparison -------------------------------------------------------------------------


def test_assert_values_close_checks_dtype_shape_and_structure():
    a = np.array([1.0, 2.0], dtype="float32")
    assert_values_close(a + 1e-7, a)
    with pytest.raises(AssertionError, match="expected dtype float32, got float64"):
        assert_values_close(a.astype("float64"), a)
    with pytest.raises(AssertionError, match=r"expected shape \(2,\), got \(1, 2\)"):
        assert_values_close(a.reshape(1, 2), a)
    with pytest.raises(AssertionError, match="expected a numpy.ndarray"):
        assert_values_close(1.0, np.asarray(1.0, dtype="float32"))
    with pytest.raises(AssertionError, match=r"result\[1\]"):
        assert_values_close((a, a), (a, a + 1))
    lst = ADTValue("Cons", (a, ADTValue("Cons", (a, ADTValue("Nil")))))
    assert_values_close(lst, lst)
    with pytest.raises(AssertionError, match=r"result.Cons\[1\].Cons\[0\]"):
        assert_values_close(ADTValue("Cons", (a, ADTValue("Cons", (a * 2, ADTValue("Nil"))))), lst)
    with pytest.raises(AssertionError, match="expected ADTValue Nil"):
        assert_values_close(ADTValue("Cons", (a, ADTValue("Nil"))), ADTValue("Nil"))
    assert_values_close(RefValue(a), RefValue(a.copy()))
    with pytest.raises(AssertionError, match="expected a RefValue"):
        assert_values_close(a, RefValue(a))
    with pytest.raises(AssertionError):
        assert_values_close(np.array([1, 2], "int32"), np.array([1, 3], "int32"))
