"""Running programs on a backend in a child process, so that native code that crashes (a signal) is
reported as a `crash` outcome of that program instead of ending the fuzzing run."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from .outcome import ErrorInfo, Outcome

__all__ = ["IsolatedBackend"]

_runners: dict = {}


def _run_in_child(backend: str, text: str, arguments: list, uses_prelude):
    """(Outcome, seconds spent) in the worker; the worker keeps one BackendRunner per backend."""
    from .differential import BackendRunner

    runner = _runners.get(backend)
    if runner is None:
        runner = _runners[backend] = BackendRunner(backend)
    before = runner.seconds
    outcome = runner.run(text, arguments, uses_prelude)
    return outcome, runner.seconds - before


DEFAULT_TIME_LIMIT = 600.0  # seconds for one build and call: a fresh 40-program cpp batch takes ~30-120 s


class IsolatedBackend:
    """A worker process (spawned, so no TVM state is forked) that runs programs on one backend; a run
    that crashes the worker or exceeds `time_limit` becomes a `crash` or `hang` outcome."""

    def __init__(self, backend: str, time_limit: float = DEFAULT_TIME_LIMIT):
        self.backend = backend
        self.time_limit = time_limit
        self.executor = None

    def _executor(self) -> ProcessPoolExecutor:
        if self.executor is None:
            self.executor = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return self.executor

    def run(self, text: str, arguments: list, uses_prelude) -> tuple[Outcome, float]:
        future = self._executor().submit(_run_in_child, self.backend, text, arguments, uses_prelude)
        try:
            return future.result(timeout=self.time_limit)
        except BrokenProcessPool:
            self.close()
            info = ErrorInfo("Crash", f"the {self.backend} worker process died (a signal)", False, crashed=True)
            return Outcome(error=info), 0.0
        except TimeoutError:
            self.close(kill=True)
            message = f"no result from {self.backend} after {self.time_limit:.0f} s (build and call)"
            return Outcome(error=ErrorInfo("Hang", message, False, hung=True)), self.time_limit

    def close(self, kill: bool = False) -> None:
        if self.executor is None:
            return
        if kill:
            for process in list(getattr(self.executor, "_processes", {}).values()):
                process.kill()  # the worker's own process (this executor started it)
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = None
