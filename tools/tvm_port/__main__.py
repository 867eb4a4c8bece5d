"""`python -m tools.tvm_port`: extract TVM's Relay test files, redirect their imports, run them, print the table."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from . import PortToolError
from .extract import (
    DEFAULT_AOT_GIT,
    DEFAULT_AOT_REF,
    DEFAULT_TVM_GIT,
    DEFAULT_TVM_REF,
    default_sources,
    extract,
    select_sources,
)
from .report import TOP_CAUSES, render_report
from .results import FileResult, results_from_junit
from .rewrite import rewrite_imports
from .run import BACKENDS, REPOSITORY_ROOT, TESTING_PLUGIN, run_file, testing_plugin_available

DEFAULT_TIMEOUT = 300.0


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    try:
        if arguments.junit_xml:
            results = [result for path in arguments.junit_xml for result in results_from_junit(Path(path))]
            print(render_report(results, arguments.backend, arguments.top, [f"From {', '.join(arguments.junit_xml)}."]))
            return 0
        return _measure(arguments)
    except PortToolError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _measure(arguments) -> int:
    out_dir = _output_directory(arguments.out)
    sources = default_sources(Path(arguments.tvm_git), arguments.ref, Path(arguments.aot_git), arguments.aot_ref)
    if arguments.files:
        sources = select_sources([name.strip() for name in arguments.files.split(",") if name.strip()], sources)
    extraction = extract(sources, out_dir, lambda path, data: rewrite_imports(data, filename=path))
    for directory in {extracted.path.parent for extracted in extraction.files}:
        # pins pytest's rootdir here, so no configuration file above the output directory applies
        (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    log_dir = out_dir / "logs"
    log_dir.mkdir(exist_ok=True)
    plugin = testing_plugin_available()
    print(
        f"extracted {len(extraction.files)} file(s) to {out_dir}; backend {arguments.backend}; "
        f"per-test timeout {arguments.timeout:g} s; {TESTING_PLUGIN} {'loaded' if plugin else 'absent'}",
        flush=True,
    )
    by_name: dict[str, FileResult] = {}
    for source, reason in extraction.skipped:
        print(f"  {source.name}: skipped, {reason}", flush=True)
        by_name[source.name] = FileResult(source.name, note=f"not extracted: {reason}")
    for extracted in extraction.files:
        started = time.monotonic()
        result = run_file(
            extracted.path, arguments.backend, arguments.timeout, log_dir, plugins=(TESTING_PLUGIN,) if plugin else ()
        )
        result.defined = extracted.defined_tests
        by_name[extracted.source.name] = result
        counts = ", ".join(f"{count} {outcome}" for outcome, count in result.counts().items() if count)
        print(f"  {result.name}: {counts or 'nothing collected'} ({time.monotonic() - started:.0f} s)", flush=True)
    results = [by_name[source.name] for source in sources]
    preamble = [
        f"TVM {arguments.ref} from `{arguments.tvm_git}`, relay-aot {arguments.aot_ref} from `{arguments.aot_git}`; "
        f"imports redirected to `transpile.tvm_compat`; per-test timeout {arguments.timeout:g} s; "
        f"`{TESTING_PLUGIN}` {'loaded' if plugin else 'absent'}. Files and logs: `{out_dir}`.",
    ]
    report = render_report(results, arguments.backend, arguments.top, preamble)
    print()
    print(report)
    (out_dir / f"report-{arguments.backend}.md").write_text(report, encoding="utf-8")
    (out_dir / f"results-{arguments.backend}.json").write_text(
        json.dumps([result.to_json() for result in results], indent=1), encoding="utf-8"
    )
    return 0


def _output_directory(requested: str | None) -> Path:
    if requested is None:
        return Path(tempfile.mkdtemp(prefix="tvm-port-"))
    out_dir = Path(requested).resolve()
    if out_dir.is_relative_to(REPOSITORY_ROOT):
        # The extracted files are other people's public reference data; they never enter this repository.
        raise PortToolError(
            f"--out {requested} is inside the repository {REPOSITORY_ROOT}; choose a directory outside it"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.tvm_port",
        description="Run TVM v0.19's Relay test files (and relay-aot's test_aot.py) on transpile, with only "
        "their import lines redirected to transpile.tvm_compat, and print passed/failed counts per file.",
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default="interpreter", help="TRANSPILE_TVM_BACKEND for the tests"
    )
    parser.add_argument("--files", help="comma-separated file names (default: all of issue 13's files)")
    parser.add_argument("--tvm-git", default=str(DEFAULT_TVM_GIT), help="git directory of an apache/tvm clone")
    parser.add_argument("--ref", default=DEFAULT_TVM_REF, help="TVM revision to take the files from")
    parser.add_argument("--aot-git", default=str(DEFAULT_AOT_GIT), help="git directory of a uwsampl/relay-aot clone")
    parser.add_argument("--aot-ref", default=DEFAULT_AOT_REF, help="relay-aot revision")
    parser.add_argument(
        "--out", help="directory for the extracted files, logs and reports (default: a new temporary one)"
    )
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per test phase (0: none)")
    parser.add_argument("--top", type=int, default=TOP_CAUSES, help="how many failure causes to list")
    parser.add_argument(
        "--junit-xml",
        action="append",
        metavar="FILE",
        help="only summarize this JUnit XML file (from `pytest --junitxml`); repeatable",
    )
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
