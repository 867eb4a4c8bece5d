"""The differential fuzzer: generated programs run on backends and compared with the interpreter.

Programs run in batches (see batch.py): one build per batch and backend. A batch that fails to
build or raises is split in halves until each failing program stands alone, so every failure is
reported as its own standalone program. The interpreter's outcome of each program is the reference.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import TranspileError
from .batch import batch_arguments, batch_text, parse_program, split_results
from .generator import GeneratedProgram
from .outcome import FAILURES, Outcome, classify

__all__ = ["CaseResult", "BackendRunner", "run_reference", "run_isolated", "differential_batch", "supported_on"]

REFERENCE = "interpreter"


@dataclass
class CaseResult:
    program: GeneratedProgram
    backend: str
    status: str
    detail: str = ""
    batch: list | None = None  # the programs of a batch when only the batch (not the program alone) fails

    @property
    def failed(self) -> bool:
        return self.status in FAILURES


def _quiet():
    """numpy's overflow and invalid-value warnings are expected on edge values."""
    manager = warnings.catch_warnings()
    manager.__enter__()
    warnings.simplefilter("ignore")
    state = np.seterr(all="ignore")
    return manager, state


def _restore(quiet) -> None:
    manager, state = quiet
    np.seterr(**state)
    manager.__exit__(None, None, None)


class BackendRunner:
    """Builds and runs programs (alone or batched) on one backend; times what it does."""

    def __init__(
        self, backend: str, crash_dir: Path | None = None, isolate: bool = False, time_limit: float | None = None
    ):
        import transpile

        self.crash_dir = crash_dir  # where the program being run is kept until it returns (a crash leaves it)
        self.isolated = None
        if isolate:
            from .isolation import IsolatedBackend

            self.isolated = IsolatedBackend(backend) if time_limit is None else IsolatedBackend(backend, time_limit)
        self.name = backend
        self.backend = transpile.get_backend(backend)
        self.seconds = 0.0
        self.builds = 0

    def supports(self, program: GeneratedProgram) -> str | None:
        """None when the backend declares every feature the program needs, else the first missing one."""
        from ...backends.features import missing_features

        missing = missing_features(self.backend, _typed(program), "main")
        return next(iter(missing), None)

    def run(self, text: str, arguments: list, uses_prelude: bool) -> Outcome:
        """Build and call a module's `@main` (in the worker process when isolated)."""
        import transpile

        if self.isolated is not None:
            self._keep_in_progress(text, arguments)
            outcome, seconds = self.isolated.run(text, arguments, uses_prelude)
            self.seconds += seconds
            self._keep_in_progress(None, None)
            return outcome
        start = time.perf_counter()
        self._keep_in_progress(text, arguments)
        quiet = _quiet()
        try:
            try:
                mod = parse_program(text, uses_prelude)
                function = transpile.compile(mod, backend=self.name)
                self.builds += 1
            except Exception as exc:  # classified by the caller (TranspileError or internal)
                return Outcome(error=exc, stage="compile")
            try:
                return Outcome(value=function(*[_fresh(a) for a in arguments]))
            except Exception as exc:  # RecursionError included
                return Outcome(error=exc, stage="run")
        finally:
            _restore(quiet)
            self.seconds += time.perf_counter() - start
            self._keep_in_progress(None, None)

    def _keep_in_progress(self, text, arguments) -> None:
        if self.crash_dir is None:
            return
        from .report import save_inputs

        stem = self.crash_dir / f"in-progress-{self.name}-{os.getpid()}"  # --jobs share the directory
        if text is None:
            stem.with_suffix(".relay").unlink(missing_ok=True)
            stem.with_suffix(".npz").unlink(missing_ok=True)
            return
        self.crash_dir.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".relay").write_text(text)
        save_inputs(stem.with_suffix(".npz"), arguments)

    def run_one(self, program: GeneratedProgram) -> Outcome:
        return self.run(program.text, program.inputs, program.uses_prelude)

    def run_batch(self, programs: list[GeneratedProgram]) -> tuple[list[Outcome], list | None]:
        """Each program's outcome, and the programs of a batch that failed although each half passed."""
        if len(programs) == 1:
            return [self.run_one(programs[0])], None
        outcome = self.run(batch_text(programs), batch_arguments(programs), any(p.uses_prelude for p in programs))
        if not outcome.is_error:
            try:
                return [Outcome(value=v) for v in split_results(outcome.value, len(programs))], None
            except AssertionError as exc:
                outcome = Outcome(error=exc)
        middle = len(programs) // 2
        first, first_combined = self.run_batch(programs[:middle])
        second, second_combined = self.run_batch(programs[middle:])
        combined = first_combined or second_combined
        results = first + second
        if combined is None and not any(r.is_error for r in results):
            # Only the whole batch fails: keep it as the reproduction (see CaseResult.batch).
            combined = (programs, outcome)
        return results, combined


def run_isolated(backend: str, text: str, arguments: list, time_limit: float = 300) -> Outcome:
    """A module's `@main` built and called once in a worker process: a trap or hang is an outcome."""
    runner = BackendRunner(backend, isolate=True, time_limit=time_limit)
    try:
        return runner.run(text, arguments, None)
    finally:
        runner.isolated.close()


def _fresh(argument):
    """A private copy of an argument (a backend must not see another's writes)."""
    return argument.copy() if isinstance(argument, np.ndarray) else argument


_typed_cache: dict[int, object] = {}


def _typed(program: GeneratedProgram):
    key = id(program)
    if key not in _typed_cache:
        if len(_typed_cache) > 256:
            _typed_cache.clear()
        _typed_cache[key] = parse_program(program.text, program.uses_prelude)
    return _typed_cache[key]


def run_reference(runner: BackendRunner, programs: list[GeneratedProgram]) -> list[Outcome]:
    """The interpreter's outcome of each program: batched, each alone when the batch raises."""
    outcome = runner.run(batch_text(programs), batch_arguments(programs), any(p.uses_prelude for p in programs))
    if not outcome.is_error:
        try:
            return [Outcome(value=v) for v in split_results(outcome.value, len(programs))]
        except AssertionError:
            pass
    return [runner.run_one(p) for p in programs]


def _against_optimized_reference(program: GeneratedProgram, outcome: Outcome, detail: str) -> tuple[str, str]:
    """A backend returned a value where the interpreter raised: legitimate when the raising computation
    is dead code the optimizer removes (pure operators may be dropped, as in TVM — documented in
    DESIGN.md). Then the interpreter on the *optimized* module is the reference for the value."""
    import transpile
    from ...relay import transform

    quiet = _quiet()
    try:
        optimized = transform.optimize(parse_program(program.text, program.uses_prelude))
        reference = Outcome(value=transpile.relay.evaluate(optimized, *[_fresh(a) for a in program.inputs]))
    except Exception as exc:  # still raising once optimized: the backend really missed the error
        return "missing_error", detail + f" (on the optimized module too: {Outcome(error=exc).describe()})"
    finally:
        _restore(quiet)
    status, difference = classify(reference, outcome, program.text)
    if status == "match":
        return "dead_error", "the error is in dead code the optimizer removes; the value matches the optimized module"
    return status, f"{difference} (against the interpreter on the optimized module; it raised only unoptimized)"


def supported_on(runner: BackendRunner, programs: list[GeneratedProgram]) -> tuple[list, list]:
    """(programs the backend declares support for, (program, missing feature) of the others)."""
    kept, skipped = [], []
    for program in programs:
        try:
            missing = runner.supports(program)
        except TranspileError as exc:
            missing = f"feature check failed: {exc}"
        if missing is None:
            kept.append(program)
        else:
            skipped.append((program, missing))
    return kept, skipped


def differential_batch(
    programs: list[GeneratedProgram], references: list[Outcome], runner: BackendRunner, batch_size: int
) -> list[CaseResult]:
    """Every program's result on `runner`'s backend against its reference outcome."""
    reference_of = {id(p): r for p, r in zip(programs, references)}
    results: list[CaseResult] = []
    kept, skipped = supported_on(runner, programs)
    results += [CaseResult(p, runner.name, "skipped", f"needs {feature}") for p, feature in skipped]
    # Programs the interpreter rejects at run time are built alone: their error must not hide the others.
    failing = [p for p in kept if reference_of[id(p)].is_error]
    passing = [p for p in kept if not reference_of[id(p)].is_error]
    for program in failing:
        outcome = runner.run_one(program)
        status, detail = classify(reference_of[id(program)], outcome, program.text)
        if status == "missing_error":
            status, detail = _against_optimized_reference(program, outcome, detail)
        results.append(CaseResult(program, runner.name, status, detail))
    for start in range(0, len(passing), batch_size):
        chunk = passing[start : start + batch_size]
        outcomes, combined = runner.run_batch(chunk)
        for program, outcome in zip(chunk, outcomes):
            status, detail = classify(reference_of[id(program)], outcome, program.text)
            results.append(CaseResult(program, runner.name, status, detail))
        if combined is not None:
            batch_programs, outcome = combined
            status, detail = classify(Outcome(value=None), outcome)
            results.append(
                CaseResult(batch_programs[0], runner.name, status, "only as a batch: " + detail, list(batch_programs))
            )
    return results
