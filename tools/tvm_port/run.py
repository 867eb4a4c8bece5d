"""Runs pytest on one extracted test file in a subprocess per attempt, restarting past a test that kills the process."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .pytest_plugin import hang_dump_path, hard_timeout
from .results import FileResult, TestResult, read_attempt

__all__ = ["BACKENDS", "BACKEND_VARIABLE", "REPOSITORY_ROOT", "TESTING_PLUGIN", "run_file", "testing_plugin_available"]

BACKENDS = ("interpreter", "python", "cpp", "tir")
BACKEND_VARIABLE = "TRANSPILE_TVM_BACKEND"
REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
# TVM's root conftest.py loads `tvm.testing.plugin` (the `target`/`dev` fixtures, `tvm.testing.parameter`
# support); the redirected equivalent is loaded the same way when the facade provides it.
TESTING_PLUGIN = "transpile.tvm_compat.testing.plugin"
MAX_ATTEMPTS = 40  # processes per file: each attempt after the first starts past a test that killed the last one
POLL_SECONDS = 0.5


def testing_plugin_available() -> bool:
    """Whether the facade's pytest plugin exists, found without importing transpile (and TVM) here."""
    spec = importlib.util.find_spec("transpile")
    if spec is None or not spec.submodule_search_locations:
        return False
    relative = Path(*TESTING_PLUGIN.split(".")[1:])
    return any(
        (Path(location) / relative).with_suffix(".py").is_file()
        or (Path(location) / relative / "__init__.py").is_file()
        for location in spec.submodule_search_locations
    )


def run_file(
    test_file: Path,
    backend: str,
    timeout: float,
    log_dir: Path,
    python: str = sys.executable,
    plugins: tuple[str, ...] | None = None,
) -> FileResult:
    """The results of `test_file` run by pytest with `TRANSPILE_TVM_BACKEND=backend`.

    Each test phase fails after `timeout` seconds; a process that makes no progress for 3×timeout+60 s
    (a hang in native code), or that dies, has its running test recorded as failed and a new process
    runs the tests it had not reached. `plugins` are loaded with `-p` (default: the facade's
    `tvm.testing` plugin when it exists).
    """
    if plugins is None:
        plugins = (TESTING_PLUGIN,) if testing_plugin_available() else ()
    stem = f"{test_file.stem}.{backend}"
    events_path, output_path, exclude_path = (
        log_dir / f"{stem}.{suffix}" for suffix in ("events.jsonl", "log", "exclude")
    )
    for path in (events_path, output_path, exclude_path, hang_dump_path(events_path)):
        path.unlink(missing_ok=True)
    result = FileResult(test_file.name, log=str(output_path))
    collected: list[str] | None = None
    done: dict[str, TestResult] = {}
    stall_limit = hard_timeout(timeout) + 60 if timeout else None  # the watchdog's limit, and a margin
    for attempt_number in range(MAX_ATTEMPTS):
        exclude_path.write_text("".join(f"{nodeid}\n" for nodeid in done), encoding="utf-8")
        start = events_path.stat().st_size if events_path.exists() else 0
        command = _pytest_command(test_file, events_path, exclude_path, timeout, python, plugins)
        returncode, stalled = _run_watched(
            command, test_file.parent, _environment(backend), output_path, events_path, stall_limit
        )
        events = events_path.read_bytes()[start:] if events_path.exists() else b""
        attempt = read_attempt(events.decode("utf-8", errors="replace").splitlines())
        if collected is None and attempt.collected is not None:
            collected = attempt.collected
        if attempt_number == 0:
            result.collect_errors = attempt.collect_errors
        done.update(attempt.finished)
        if attempt.session_finished:
            break
        if attempt.running is None:
            result.note = f"pytest {_ending(returncode, stalled, timeout)} outside any test: {_last_line(output_path)}"
            break
        exception, message = _death(returncode, stalled, timeout)
        dump = hang_dump_path(events_path)
        if exception == "HardTimeout" and dump.exists() and dump.stat().st_size:
            message += f"; stacks in {dump}"
        done[attempt.running] = TestResult(attempt.running, "failed", exception, message)
        if collected is None or all(nodeid in done for nodeid in collected):
            break
    else:
        result.note = f"gave up after {MAX_ATTEMPTS} processes died; the tests not reached count as failed"
    for nodeid in collected or []:
        result.tests.append(
            done.get(nodeid) or TestResult(nodeid, "failed", "NotRun", "never ran: the test processes kept dying")
        )
    return result


def _pytest_command(test_file: Path, events: Path, exclude: Path, timeout: float, python: str, plugins) -> list[str]:
    command = [python, "-m", "pytest", test_file.name, "-q", "--no-header", "-rN", "-p", "no:cacheprovider"]
    command += ["-p", "tools.tvm_port.pytest_plugin", "--tvm-port-log", str(events), "--tvm-port-exclude", str(exclude)]
    command += ["--tvm-port-timeout", f"{timeout:g}"]
    for plugin in plugins:
        command += ["-p", plugin]
    return command


def _environment(backend: str) -> dict[str, str]:
    environment = dict(os.environ)
    environment[BACKEND_VARIABLE] = backend
    # `tools` (the plugin) and `transpile` come from this checkout, whatever the test directory is.
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY_ROOT), environment.get("PYTHONPATH")]))
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


def _run_watched(command, cwd: Path, environment, output_path: Path, events_path: Path, stall_limit: float | None):
    """(return code, whether it was killed for making no progress) of `command`; progress = the events log grows."""
    with open(output_path, "ab") as output:
        output.write(f"$ {' '.join(command)}\n".encode())
        output.flush()
        process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=output, stderr=subprocess.STDOUT)
        last_size, last_change = -1, time.monotonic()
        while process.poll() is None:
            time.sleep(POLL_SECONDS)
            size = events_path.stat().st_size if events_path.exists() else 0
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif stall_limit is not None and time.monotonic() - last_change > stall_limit:
                process.kill()
                process.wait()
                return process.returncode, True
        return process.returncode, False


def _death(returncode: int, stalled: bool, timeout: float) -> tuple[str, str]:
    """(exception, message) recorded for the test a process died in."""
    if stalled or returncode == 1:  # 1: the plugin's faulthandler watchdog ended the process
        return (
            "HardTimeout",
            f"no progress for over {hard_timeout(timeout):g} s (stuck where the per-test timeout cannot interrupt)",
        )
    return "Crash", f"the test process {_ending(returncode, stalled, timeout)}"


def _ending(returncode: int, stalled: bool, timeout: float) -> str:
    if stalled:
        return f"was killed after {hard_timeout(timeout) + 60:g} s without progress"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _last_line(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"
