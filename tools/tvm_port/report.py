"""The per-file table of a measurement run and its most common failure causes, as Markdown."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .results import OUTCOMES, FileResult, TestResult

__all__ = ["Cause", "normalize_message", "failure_causes", "file_table", "render_report"]

TOP_CAUSES = 15
_MESSAGE_LIMIT = 160


@dataclass(frozen=True)
class Cause:
    """Failures that share an exception type and a normalized first message line."""

    count: int
    exception: str
    message: str
    example: str  # one test id (or a file, for a collection error) that failed this way


def normalize_message(message: str | None) -> str:
    """The first non-empty line of `message` with addresses and numbers masked, so the same cause groups once.

    Names (quoted or not) stay: `no attribute 'ScopeBuilder'` and `no attribute 'astext'` are two causes.
    """
    line = next((line.strip() for line in (message or "").splitlines() if line.strip()), "")
    line = re.sub(r"0x[0-9a-fA-F]+", "0x…", line)
    line = re.sub(r"(?<![\w.])[-+]?\d+(?:\.\d+)*(?:[eE][-+]?\d+)?(?![\w])", "N", line)  # 3, 1e-07, 0.0.5
    return line if len(line) <= _MESSAGE_LIMIT else line[: _MESSAGE_LIMIT - 1] + "…"


def failure_causes(results: list[FileResult], limit: int = TOP_CAUSES) -> list[Cause]:
    """The `limit` most frequent causes among failed and erroring tests and files that did not collect."""
    counts: Counter[tuple[str, str]] = Counter()
    examples: dict[tuple[str, str], str] = {}
    for result in results:
        failures: list[tuple[TestResult, str]] = [
            (error, f"{result.name} (collection)") for error in result.collect_errors
        ]
        failures += [(test, test.nodeid) for test in result.tests if test.outcome in ("failed", "error")]
        for test, example in failures:
            key = (test.exception or "Error", normalize_message(test.message))
            counts[key] += 1
            examples.setdefault(key, example)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        Cause(count, exception, message, examples[(exception, message)])
        for (exception, message), count in ranked[:limit]
    ]


def file_table(results: list[FileResult]) -> str:
    """Markdown: one row per file (defined / collected / each outcome / passed %), then the totals."""
    header = ["file", "defined", "collected", *OUTCOMES, "passed %", "note"]
    rows = [
        _row(result.name, result.defined, result.collected, result.counts(), _file_note(result)) for result in results
    ]
    totals = {outcome: sum(result.counts()[outcome] for result in results) for outcome in OUTCOMES}
    defined = sum(result.defined or 0 for result in results)
    broken = sum(1 for result in results if result.collect_errors or (result.note and not result.tests))
    rows.append(
        _row(
            "**total**",
            defined,
            sum(result.collected for result in results),
            totals,
            f"{broken} file(s) did not run" if broken else "",
        )
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 2) + ["---"]) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render_report(results: list[FileResult], backend: str, limit: int = TOP_CAUSES, preamble: list[str] = ()) -> str:
    """The whole report: heading, any preamble lines, the file table, the top failure causes."""
    lines = [f"## TVM Relay test files on the `{backend}` backend", ""]
    if preamble:
        lines += [*preamble, ""]
    lines += [file_table(results), ""]
    causes = failure_causes(results, limit)
    if causes:
        lines += [
            f"### Top {len(causes)} failure causes",
            "",
            "| tests | exception | message (normalized) | example |",
            "|---:|---|---|---|",
        ]
        lines += [
            f"| {cause.count} | {_cell(cause.exception)} | {_cell(cause.message)} | {_cell(cause.example)} |"
            for cause in causes
        ]
        lines.append("")
    return "\n".join(lines)


def _row(name: str, defined: int | None, collected: int, counts: dict[str, int], note: str) -> list[str]:
    percent = f"{100 * counts['passed'] / collected:.1f}" if collected else "—"
    return [
        name,
        "—" if defined is None else str(defined),
        str(collected),
        *(str(counts[o]) for o in OUTCOMES),
        percent,
        _cell(note),
    ]


def _file_note(result: FileResult) -> str:
    notes = [f"collection: {error.exception}: {error.message}" for error in result.collect_errors]
    if result.note:
        notes.append(result.note)
    return "; ".join(notes)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
