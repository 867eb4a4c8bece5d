"""pytest plugin loaded into each test process: a per-test timeout, and every result written at once as a JSON line.

The log survives the process: when a test kills it (a crash in native code, a hang no signal can
interrupt), the runner still knows every result before it and which test was running.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import signal
import time
from pathlib import Path

import pytest

__all__ = ["TestTimeout", "hard_timeout", "hang_dump_path", "describe_exception", "exception_from_text"]


class TestTimeout(BaseException):
    """A test phase ran past the per-test timeout (a BaseException, so a test's `except Exception` cannot hide it)."""

    __test__ = False


def pytest_addoption(parser):
    group = parser.getgroup("tvm_port", "TVM test-file measurement (tools.tvm_port)")
    group.addoption("--tvm-port-log", metavar="PATH", help="append one JSON line per collection and test event to PATH")
    group.addoption(
        "--tvm-port-timeout",
        type=float,
        default=0.0,
        metavar="S",
        help="fail a test phase after S seconds; end the process after 3*S+60 s in one test (0: no limit)",
    )
    group.addoption("--tvm-port-exclude", metavar="PATH", help="file of node ids (one a line) not to run")


def pytest_configure(config):
    log = config.getoption("tvm_port_log", None)
    if log:
        config.pluginmanager.register(
            _Recorder(Path(log), config.getoption("tvm_port_timeout"), config.getoption("tvm_port_exclude")),
            "tvm_port_recorder",
        )


def hard_timeout(timeout: float) -> float:
    """Seconds without progress after which the watchdog ends the process (signals cannot reach native code)."""
    return 3 * timeout + 60


def hang_dump_path(log: Path) -> Path:
    """Where the watchdog writes the stacks of a process it ends: beside the events log."""
    return Path(log).with_suffix(".hang.txt")


def describe_exception(value: BaseException) -> tuple[str, str]:
    """(exception type name, first non-empty line of its message) — the type qualified unless it is a builtin."""
    if isinstance(value, pytest.Collector.CollectError) and value.__cause__ is not None:
        value = value.__cause__  # an ImportError of the test module, wrapped by pytest
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    if kind.__name__ == "FixtureLookupError":
        text = getattr(value, "msg", None) or f"fixture '{getattr(value, 'argname', '?')}' not found"
    else:
        try:
            text = str(value)
        except Exception as error:  # noqa: BLE001 - a broken __str__ must not lose the result
            text = f"<str() raised {type(error).__name__}>"
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return name, first_line[:500]


class _Recorder:
    def __init__(self, log: Path, timeout: float, exclude: str | None):
        self.log = open(log, "a", buffering=1, encoding="utf-8")
        self.timeout = timeout
        self.excluded = set(Path(exclude).read_text(encoding="utf-8").splitlines()) if exclude else set()
        self.collect_exceptions: dict[str, tuple[str, str]] = {}
        # pytest captures fd 2 while a test runs: a watchdog dump written there would vanish with the process.
        self.hang_dump = open(hang_dump_path(log), "a", encoding="utf-8") if timeout else None

    def _write(self, **event):
        event["time"] = time.time()
        self.log.write(json.dumps(event, default=str) + "\n")

    # Collection

    def pytest_collection_modifyitems(self, config, items):
        if not self.excluded:
            return
        excluded = [item for item in items if item.nodeid in self.excluded]
        if excluded:
            config.hook.pytest_deselected(items=excluded)
            items[:] = [item for item in items if item.nodeid not in self.excluded]

    def pytest_collection_finish(self, session):
        self._write(event="collected", ids=[item.nodeid for item in session.items])

    def pytest_exception_interact(self, node, call, report):
        if isinstance(report, pytest.CollectReport) and call.excinfo is not None:
            self.collect_exceptions[report.nodeid] = describe_exception(call.excinfo.value)

    def pytest_collectreport(self, report):
        if report.failed:
            exception, message = self.collect_exceptions.get(report.nodeid) or exception_from_text(str(report.longrepr))
            self._write(event="collect_error", nodeid=report.nodeid, exception=exception, message=message)

    # Tests

    def pytest_runtest_logstart(self, nodeid, location):
        self._write(event="start", nodeid=nodeid)
        if self.timeout:
            faulthandler.dump_traceback_later(hard_timeout(self.timeout), exit=True, file=self.hang_dump)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        with self._phase_timeout():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        with self._phase_timeout():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        with self._phase_timeout():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if (
            call.excinfo is not None
            and not report.skipped
            and not isinstance(call.excinfo.value, pytest.skip.Exception)
        ):
            report.tvm_port_exception = describe_exception(call.excinfo.value)
        return report

    def pytest_runtest_logreport(self, report):
        exception, message = getattr(report, "tvm_port_exception", (None, None))
        if report.failed and exception is None:  # a failure without an exception: `[XPASS(strict)] reason`
            exception, message = "Failed", str(report.longrepr).strip().partition("\n")[0]
        skip_reason = None
        if report.skipped and isinstance(report.longrepr, tuple):
            skip_reason = report.longrepr[2].removeprefix("Skipped: ")
        self._write(
            event="report",
            nodeid=report.nodeid,
            when=report.when,
            outcome=report.outcome,
            xfail=getattr(report, "wasxfail", None),
            exception=exception,
            message=message,
            skip_reason=skip_reason,
            duration=report.duration,
        )

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.timeout:
            faulthandler.cancel_dump_traceback_later()
        self._write(event="finish", nodeid=nodeid)

    def pytest_sessionfinish(self, session, exitstatus):
        self._write(event="session_finish", exitstatus=int(exitstatus))

    def pytest_unconfigure(self, config):
        self.log.close()
        if self.hang_dump:
            self.hang_dump.close()

    @contextlib.contextmanager
    def _phase_timeout(self):
        if not self.timeout:
            yield
            return

        def expire(signum, frame):
            raise TestTimeout(f"over the per-test timeout of {self.timeout:g} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def exception_from_text(text: str) -> tuple[str, str]:
    """(type, message) from a formatted error when the exception itself is not at hand: its first `E   ` line."""
    for line in text.splitlines():
        if line.startswith("E "):
            body = line[1:].strip()
            kind, separator, message = body.partition(": ")
            if separator and kind.replace(".", "").replace("_", "").isalnum():
                return kind, message
            return "Error", body
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return "Error", first[:500]
