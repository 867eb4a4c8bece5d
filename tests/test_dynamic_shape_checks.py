"""`?` dimensions whose run-time sizes break an operator's type relation: every backend raises or agrees.

A type relation checks static dimensions when the program is compiled; a `?` dimension is only
known when the program runs, and whatever the relation would have demanded of it (broadcastable
operands, equal channel counts, a reshape that keeps the element count, indices in range...)
must be checked then. The interpreter's numpy reference raises EvaluationError; compiled kernels
must not read or write outside their buffers instead, so their TE lowerings declare those
conditions with `te_support.require` and the cpp backend checks them before each kernel call.

The sweep has two halves over one table of cases (tests/dynamic_shape_cases.py, one case per
operator and kind of violation; every registered operator is either there or named as having no
run-time shape condition):
- the kernel oracle (fast, no build): lower each case's operator to TE, evaluate the kernel's
  requirements and result shapes at the run-time sizes, and compare with what the interpreter
  does; a missing requirement shows up as "interpreter raises, requirements hold";
- end to end: python and cpp (one build holding every case as a closure, run in a subprocess so
  a kernel that reads past a buffer cannot take pytest down) against the interpreter; tir must
  refuse `?` dimensions at compile time or agree.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError, UnsupportedFeatureError

pytest.importorskip("tvm")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dynamic_shape_cases import CASES, NO_RUNTIME_CONDITION, Case, case_ids  # noqa: E402

IDS = case_ids(CASES)


# ---------------------------------------------------------------- outcomes


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _flat(v)]
    return [np.asarray(value)]


def outcome(run) -> tuple:
    """("ok", [arrays]) or ("error", exception type name, message) of calling `run()`."""
    try:
        return ("ok", _flat(run()))
    except EvaluationError as exc:
        return ("error", "EvaluationError", str(exc))


def describe(result) -> str:
    if result[0] == "error":
        return f"{result[1]}: {result[2][:160]}"
    return "result " + ", ".join(f"{a.dtype}{list(a.shape)}" for a in result[1])


def mismatch(expected, found) -> str | None:
    """Why `found` differs from the interpreter's `expected`, or None when they agree."""
    if expected[0] != found[0]:
        return f"interpreter: {describe(expected)}; found {describe(found)}"
    if expected[0] == "error":
        return None
    if len(expected[1]) != len(found[1]):
        return f"interpreter: {describe(expected)}; found {describe(found)}"
    for want, got in zip(expected[1], found[1]):
        if want.shape != got.shape or want.dtype != got.dtype:
            return f"interpreter: {describe(expected)}; found {describe(found)}"
        if not np.allclose(want.astype(np.float64), got.astype(np.float64), rtol=1e-5, atol=1e-5, equal_nan=True):
            return f"values differ: interpreter {want.ravel()[:8]}, found {got.ravel()[:8]}"
    return None


_REFERENCE: dict = {}


def reference(case: Case):
    """The interpreter's outcome for the case (memoised: the oracle and the backends share it)."""
    key = case.label
    if key not in _REFERENCE:
        run = transpile.compile(relay.parse(case.module_text()), backend="interpreter")
        _REFERENCE[key] = outcome(lambda: run(*case.args))
    return _REFERENCE[key]


# ---------------------------------------------------------------- coverage of the registry


def test_every_registered_operator_is_swept_or_has_no_runtime_condition():
    from transpile.relay.op.registry import registered_ops

    names = {op.name for op in registered_ops()}
    swept = {case.op for case in CASES}
    unclassified = sorted(names - swept - set(NO_RUNTIME_CONDITION))
    assert not unclassified, f"operators neither swept nor declared free of run-time shape conditions: {unclassified}"
    stale = sorted((swept | set(NO_RUNTIME_CONDITION)) - names)
    assert not stale, f"the sweep names operators the registry does not have: {stale}"
    both = sorted(swept & set(NO_RUNTIME_CONDITION))
    assert not both, f"operators both swept and declared free of conditions: {both}"


def test_most_cases_are_violations_the_interpreter_rejects():
    """The table is about broken relations: most cases must make the reference raise (a case that
    stopped raising after a registry change would otherwise quietly test nothing)."""
    rejected = [case.label for case in CASES if case.rejected and reference(case)[0] != "error"]
    assert not rejected, f"cases marked as violations that the interpreter runs: {rejected}"


# ---------------------------------------------------------------- the kernel oracle


def _kernel_verdict(case: Case) -> tuple:
    """("refused", reason) when the operator cannot be a kernel with these `?` dims, else
    ("checks", failed requirement messages, result shapes) at the case's run-time sizes."""
    from tvm import sym, tirx

    from transpile.kernels.lower import kernel_shapes
    from transpile.lir.kernels import kernel_from_function

    typed = relay.transform.InferType()(relay.parse(case.module_text()))
    kernel = kernel_from_function("k_case", typed["main"])
    try:
        shapes = kernel_shapes(kernel)
    except UnsupportedFeatureError as exc:
        return ("refused", str(exc))
    analyzer = sym.Analyzer()
    for var, index, axis in shapes.dims:
        analyzer.bind(var, tirx.IntImm("int32", int(np.shape(case.args[index])[axis])))

    def value(expr) -> int:
        if isinstance(expr, int):
            return expr
        folded = analyzer.simplify(expr)
        assert isinstance(folded, tirx.IntImm), f"{case.label}: {expr} does not fold to a constant"
        return int(folded.value)

    failed = [message for condition, message in shapes.requirements if not value(condition)]
    results = [tuple(value(d) for d in shape) for shape in shapes.outputs]
    if any(d < 0 for shape in results for d in shape):  # the cpp wrapper checks this too
        failed.append(f"a negative result dimension in {results}")
    return ("checks", failed, results)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_kernel_requirements_match_the_reference(case):
    if case.op in _NO_KERNEL:
        pytest.skip(f"{case.op} has no TE lowering (its result shape depends on data)")
    expected = reference(case)
    verdict = _kernel_verdict(case)
    if verdict[0] == "refused":
        return  # cpp refuses to compile the program: no silent result possible
    _, failed, shapes = verdict
    if expected[0] == "error":
        assert failed, f"{case.label}: the interpreter raises ({expected[2][:200]}) but every kernel requirement holds"
        return
    assert not failed, f"{case.label}: the interpreter runs it, the kernel requires {failed}"
    assert shapes == [a.shape for a in expected[1]], f"{case.label}: kernel result shapes {shapes}"


_NO_KERNEL = {"dyn.broadcast_to", "argwhere", "unique"}


# ---------------------------------------------------------------- end to end


def _compiled_cases(backend: str):
    """(cases for the batch, labels of cases the backend refuses at compile time).

    A case the kernel oracle finds no kernel for is compiled on its own first: refusing it
    (UnsupportedFeatureError) is a fine answer, and it must not take the batch's build down."""
    batch, refused = [], []
    for case in CASES:
        risky = case.op in _NO_KERNEL or (backend != "python" and _kernel_verdict(case)[0] == "refused")
        if risky:
            try:
                transpile.compile(relay.parse(case.module_text()), backend=backend)
            except UnsupportedFeatureError:
                refused.append(case.label)
                continue
        batch.append(case)
    return batch, refused


def batch_text(cases) -> str:
    """One module whose main returns every case as a closure: one build for the whole sweep."""
    return "def @main() {\n  (" + ",\n   ".join(case.closure_text() for case in cases) + ",)\n}"


def run_batch(backend: str, cases, out_dir: Path) -> None:
    """Calls every case's closure, writing `<index>.pkl` with its outcome after each call (so a
    crash leaves the finished ones and names the case it died in)."""
    closures = transpile.compile(relay.parse(batch_text(cases)), backend=backend)()
    for index, (case, closure) in enumerate(zip(cases, closures)):
        (out_dir / "running").write_text(str(index))
        result = outcome(lambda: closure(*case.args))
        (out_dir / f"{index}.pkl").write_bytes(pickle.dumps(result))


def _batch_outcomes(backend: str, cases, tmp_path: Path) -> list:
    if backend == "python":
        run_batch(backend, cases, tmp_path)
    else:
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path;"
            "import test_dynamic_shape_checks as t;"
            "t.run_batch(sys.argv[2], [t.CASES[int(i)] for i in sys.argv[4].split(',')], Path(sys.argv[3]))"
        )
        indices = ",".join(str(CASES.index(case)) for case in cases)
        here = str(Path(__file__).resolve().parent)
        done = subprocess.run(
            [sys.executable, "-c", code, here, backend, str(tmp_path), indices],
            capture_output=True,
            text=True,
            timeout=1800,
            env=dict(os.environ),
        )
        if done.returncode != 0:
            running = (tmp_path / "running").read_text() if (tmp_path / "running").exists() else None
            where = f"while running {cases[int(running)].label}" if running is not None else "before any case ran"
            pytest.fail(f"{backend} batch died ({done.returncode}) {where}:\n{done.stderr[-3000:]}")
    return [pickle.loads((tmp_path / f"{i}.pkl").read_bytes()) for i in range(len(cases))]


@pytest.mark.parametrize("backend", ["python", "cpp"])
def test_backend_agrees_with_the_interpreter(backend, tmp_path):
    batch, refused = _compiled_cases(backend)
    assert len(refused) < len(CASES) // 4, f"{backend} refuses too much of the sweep: {sorted(refused)}"
    found = _batch_outcomes(backend, batch, tmp_path)
    problems = []
    for case, result in zip(batch, found):
        why = mismatch(reference(case), result)
        if why is not None:
            problems.append(f"{case.label}: {why}")
    assert not problems, f"{backend}: {len(problems)} of {len(batch)} cases differ:\n" + "\n".join(problems)


def test_tir_refuses_dynamic_dimensions_or_agrees():
    for case in CASES:
        try:
            run = transpile.compile(relay.parse(case.module_text()), backend="tir")
        except UnsupportedFeatureError:
            continue
        why = mismatch(reference(case), outcome(lambda: run(*case.args)))
        assert why is None, f"tir, {case.label}: {why}"


# ---------------------------------------------------------------- the reported reproductions


@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp"])
def test_reshape_of_a_dynamic_input_to_a_static_shape_checks_the_size(backend):
    static_result = "def @main(%x: Tensor[(?), float32]) -> Tensor[(3), float32] { reshape(%x, newshape=[3]) }"
    run = transpile.compile(relay.parse(static_result), backend=backend)
    with pytest.raises(EvaluationError, match="reshape"):
        run(np.ones(4, np.float32))
    np.testing.assert_array_equal(run(np.arange(3, dtype=np.float32)), np.arange(3, dtype=np.float32))
    two_by_three = "def @main(%a: Tensor[(?), float32]) { reshape(%a, newshape=[2, 3]) }"
    run = transpile.compile(relay.parse(two_by_three), backend=backend)
    with pytest.raises(EvaluationError, match="reshape"):
        run(np.ones(5, np.float32))


@pytest.mark.parametrize("backend", ["interpreter", "python", "cpp"])
def test_bias_add_rejects_a_bias_that_would_only_broadcast(backend):
    text = "def @main(%a: Tensor[(2, ?), float32], %b: Tensor[(?), float32]) { nn.bias_add(%a, %b) }"
    run = transpile.compile(relay.parse(text), backend=backend)
    with pytest.raises(EvaluationError, match="bias"):
        run(np.ones((2, 3), np.float32), np.ones(1, np.float32))
    np.testing.assert_array_equal(run(np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)), 1 + np.arange(3) * np.ones((2, 1)))


if __name__ == "__main__":  # python tests/test_dynamic_shape_checks.py: the sweep's table, one line per case
    for case in CASES:
        print(case.label, "->", describe(reference(case)))
