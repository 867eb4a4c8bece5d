"""Shared test fixtures: the location of the real-world Relay corpus; fatal errors of test workers reported at the end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("TRANSPILE_CORPUS", REPO.parent / "shared" / "corpus" / "relay"))


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not (CORPUS / "MANIFEST.json").exists():
        pytest.skip(f"the Relay corpus is not at {CORPUS} (set TRANSPILE_CORPUS)")
    return CORPUS


# A test worker that dies (a signal in native code) shows only "worker crashed" in xdist's summary,
# and its faulthandler dump scrolls by in the middle of the log. Each worker writes its dumps to a
# file the controller prints at the end, beside the failure.
CRASH_DIR_VARIABLE = "TRANSPILE_TEST_CRASH_DIR"
CRASH_DIR_OWNED = pytest.StashKey[str]()


def pytest_configure(config):
    if not hasattr(config, "workerinput") and CRASH_DIR_VARIABLE not in os.environ:
        import tempfile

        os.environ[CRASH_DIR_VARIABLE] = tempfile.mkdtemp(prefix="transpile-test-crashes-")
        config.stash[CRASH_DIR_OWNED] = os.environ[CRASH_DIR_VARIABLE]


@pytest.fixture(scope="session", autouse=True)
def fatal_errors_to_a_file():
    import faulthandler

    directory = os.environ.get(CRASH_DIR_VARIABLE)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not directory or not worker or not os.path.isdir(directory):
        yield
        return
    with open(os.path.join(directory, f"{worker}.log"), "w") as log:
        faulthandler.enable(file=log, all_threads=True)
        yield
        faulthandler.disable()


def pytest_terminal_summary(terminalreporter, config):
    directory = os.environ.get(CRASH_DIR_VARIABLE)
    if hasattr(config, "workerinput") or not directory or not os.path.isdir(directory):
        return
    for log in sorted(Path(directory).glob("*.log")):
        lines = [line for line in log.read_text(errors="replace").splitlines() if not _is_harness_frame(line)]
        if lines:
            terminalreporter.section(f"fatal error in test worker {log.stem}", sep="-")
            terminalreporter.write_line("\n".join(lines[:60]))


def _is_harness_frame(line: str) -> bool:
    harness = ("/_pytest/", "/pluggy/", "/execnet/", "/xdist/", '"<string>"')
    return line.startswith("Extension modules:") or any(part in line for part in harness)


def pytest_unconfigure(config):
    directory = config.stash.get(CRASH_DIR_OWNED, None)
    if directory:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)
        os.environ.pop(CRASH_DIR_VARIABLE, None)
