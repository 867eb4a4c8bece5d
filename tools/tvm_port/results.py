"""Per-test and per-file results of a measurement run, read from the plugin's JSON lines or from a JUnit XML file."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import PortToolError
from .pytest_plugin import exception_from_text

__all__ = ["OUTCOMES", "TestResult", "FileResult", "Attempt", "read_attempt", "results_from_junit"]

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed")


@dataclass
class TestResult:
    """One test's outcome (one of OUTCOMES); `exception`/`message` say why it failed, or why it was skipped."""

    __test__ = False

    nodeid: str
    outcome: str
    exception: str | None = None
    message: str | None = None


@dataclass
class FileResult:
    """A test file's results; `collect_errors` (errors importing or collecting it) fail the whole file."""

    name: str
    tests: list[TestResult] = field(default_factory=list)
    collect_errors: list[TestResult] = field(default_factory=list)
    defined: int | None = None  # test functions the file defines, before parametrization
    note: str | None = None  # why the file was not run, or how its run ended abnormally
    log: str | None = None  # pytest's output

    @property
    def collected(self) -> int:
        return len(self.tests)

    def counts(self) -> dict[str, int]:
        counts = {outcome: 0 for outcome in OUTCOMES}
        for test in self.tests:
            counts[test.outcome] += 1
        counts["error"] += len(self.collect_errors)
        return counts

    def to_json(self) -> dict:
        return asdict(self) | {"collected": self.collected, "counts": self.counts()}


@dataclass
class Attempt:
    """What one pytest process reported before it ended (normally or not)."""

    collected: list[str] | None = None
    collect_errors: list[TestResult] = field(default_factory=list)
    finished: dict[str, TestResult] = field(default_factory=dict)
    running: str | None = None  # the test started but never finished: the process died in it
    session_finished: bool = False


def read_attempt(lines: list[str]) -> Attempt:
    """The results in the plugin's JSON lines of one pytest process (a torn last line is ignored)."""
    attempt = Attempt()
    reports: dict[str, list[dict]] = {}
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # the process died while writing this line
        kind = event.get("event")
        if kind == "collected":
            attempt.collected = list(event["ids"])
        elif kind == "collect_error":
            attempt.collect_errors.append(TestResult(event["nodeid"], "error", event["exception"], event["message"]))
        elif kind == "start":
            attempt.running = event["nodeid"]
            reports[event["nodeid"]] = []
        elif kind == "report":
            reports.setdefault(event["nodeid"], []).append(event)
        elif kind == "finish":
            attempt.finished[event["nodeid"]] = _merge_phases(event["nodeid"], reports.pop(event["nodeid"], []))
            attempt.running = None
        elif kind == "session_finish":
            attempt.session_finished = True
    return attempt


def _merge_phases(nodeid: str, reports: list[dict]) -> TestResult:
    """One outcome from the setup/call/teardown reports, as pytest's summary counts them."""
    phases = {report["when"]: report for report in reports}
    setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
    for phase, failed_outcome in ((setup, "error"), (call, "failed")):
        if phase is None:
            continue
        if phase["outcome"] == "failed":
            return TestResult(nodeid, failed_outcome, phase["exception"], phase["message"])
        if phase["outcome"] == "skipped":
            if phase.get("xfail") is not None:
                return TestResult(nodeid, "xfailed", phase["exception"], phase["xfail"] or phase["message"])
            return TestResult(nodeid, "skipped", None, phase.get("skip_reason"))
    if teardown is not None and teardown["outcome"] == "failed":
        return TestResult(nodeid, "error", teardown["exception"], teardown["message"])
    if call is None:
        return TestResult(nodeid, "error", "NoResult", "pytest reported no call phase for this test")
    return TestResult(nodeid, "passed")


def results_from_junit(path: Path) -> list[FileResult]:
    """Per-file results from a JUnit XML file written by `pytest --junitxml` (one file per test module)."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as error:
        raise PortToolError(f"{path}: not a readable JUnit XML file ({error})") from None
    files: dict[str, FileResult] = {}
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        if not classname:  # pytest reports a module it could not collect as a test case named after the module
            module, classes = name, []
        else:
            module, *classes = classname.split(".")
        file_name = module.replace(".", "/") + ".py"
        result = files.setdefault(file_name, FileResult(file_name))
        result.tests.append(_junit_case(case, "::".join([file_name, *classes, name]) if classname else file_name))
    for result in files.values():
        collection = [test for test in result.tests if test.nodeid == result.name]
        if collection:
            result.collect_errors = [
                TestResult(test.nodeid, "error", test.exception, test.message) for test in collection
            ]
            result.tests = [test for test in result.tests if test.nodeid != result.name]
    return list(files.values())


def _junit_case(case, nodeid: str) -> TestResult:
    for child in case:
        text = child.text or ""
        message = child.get("message") or ""
        if child.tag == "skipped":
            if child.get("type") == "pytest.xfail":
                return TestResult(nodeid, "xfailed", None, message)
            return TestResult(nodeid, "skipped", None, message)
        if child.tag in ("failure", "error"):
            exception, detail = _junit_exception(message, text)
            return TestResult(nodeid, "failed" if child.tag == "failure" else "error", exception, detail)
    return TestResult(nodeid, "passed")


def _junit_exception(message: str, text: str) -> tuple[str, str]:
    """(type, first message line) of a JUnit failure or error.

    pytest writes `Type: text` as the message of most exceptions, `failed on setup with "Type: text"`
    for an error in a fixture, and only the assertion (`assert 1 == 2`) for a failed `assert`; the
    element's text is the traceback, whose `E   ` lines and last `path:line: Type` line fill the gaps.
    """
    setup = _PHASE_FAILURE.match(message)
    if setup:
        message = setup.group(1)
    kind, separator, rest = message.partition(": ")
    if separator and _TYPE_NAME.fullmatch(kind):
        return kind, _first_line(rest)
    kind, detail = exception_from_text(text) if text.strip() else ("Error", _first_line(message))
    if kind == "Error":
        location = _LOCATION_TYPE.findall(text)
        if location:
            kind = location[-1]
    return kind, detail


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


_PHASE_FAILURE = re.compile(r'failed on (?:setup|teardown) with "(.*)"', re.S)
_TYPE_NAME = re.compile(r"[A-Za-z_][\w.]*")
_LOCATION_TYPE = re.compile(r"^\S[^\n]*:\d+: ([A-Za-z_][\w.]*)$", re.M)
