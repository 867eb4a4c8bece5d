"""`python -m bench builds`: build times, cache hits in a fresh process and artifact sizes of the corpus models.

For each (model, backend), in a fresh empty cache (`TRANSPILE_CACHE_DIR` = a new temporary folder):
1. first build: a child process (`python -m transpile.testing.run_model --no-run`) that imports
   transpile, parses the model, binds its weights (read from an .npz), builds and loads the
   library — its wall-clock time;
2. cache hit: the same child again, several times — the whole process's wall-clock time, imports
   included (what a user waits for when they start a script that uses a built model);
3. a check: one more child runs the model and its output is compared with the numpy reference;
4. sizes: the generated source, the library and any other files in the artifact's directory,
   against the weights' bytes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MODELS = ("mnist", "mobilenet_v2", "resnet50_v2")
BACKENDS = ("cpp", "tir")
TITLES = {
    "mnist": "MNIST",
    "mobilenet_v2": "MobileNet v2",
    "resnet50_v2": "ResNet-50 v2",
    "resnext50": "ResNeXt-50",
    "gpt2": "GPT-2",
}
SOURCE_SUFFIXES = (
    ".cpp",
    ".cc",
    ".c",
    ".py",
)  # what the backends generate (cpp: main.cpp; tir: main.tir.py, program.c)
NOT_ARTIFACT = (".h", ".json", ".o", ".s", ".lock")  # copied runtime headers, metadata, build leftovers
# Relative to the output's largest magnitude (float32 kernels vs the float64 reference).
TOLERANCE = 1e-4

# The targets: (model, backend, measure, limit, text).
TARGETS = [
    ("resnet50_v2", "cpp", "first_build", 90.0, "first cpp build ≤ 90 s"),
    ("resnet50_v2", "cpp", "hit", 1.0, "cache hit in a fresh process ≤ 1 s"),
    ("resnet50_v2", "cpp", "source_bytes", 2e6, "generated C++ ≤ 2 MB"),
    ("resnet50_v2", "cpp", "library_ratio", 1.1, "libmain.so ≤ 1.1 × the weights' bytes"),
    ("mobilenet_v2", "cpp", "first_build", 30.0, "first cpp build ≤ 30 s"),
    ("mobilenet_v2", "tir", "first_build", 60.0, "tir build ≤ 60 s"),
]


@dataclass
class Row:
    """One (model, backend): times in seconds, sizes in bytes, or why there are none."""

    model: str
    backend: str
    status: str = "ok"  # "ok", "failed" or "WRONG"
    reason: str = ""
    load_before: float = 0.0  # 1-minute load average when the first build started
    first_build: float | None = None
    first_stages: dict = field(default_factory=dict)
    hits: list[float] = field(default_factory=list)
    hit_stages: dict = field(default_factory=dict)
    source_files: list[str] = field(default_factory=list)
    source_bytes: int = 0
    library_bytes: int = 0
    other_bytes: int = 0
    weight_bytes: int = 0
    error: float | None = None

    @property
    def hit(self) -> float | None:
        return statistics.median(self.hits) if self.hits else None

    @property
    def library_ratio(self) -> float | None:
        return self.library_bytes / self.weight_bytes if self.weight_bytes else None


class ChildFailed(RuntimeError):
    """The build/run child process exited with an error (or crashed)."""


def _child(model: str, backend: str, weights: Path, cache: Path, out: Path | None = None) -> tuple[float, dict]:
    """Run `transpile.testing.run_model` in a fresh process; (wall seconds, its JSON report)."""
    command = [
        sys.executable,
        "-m",
        "transpile.testing.run_model",
        model,
        "--backend",
        backend,
        "--weights",
        str(weights),
    ]
    command += ["--out", str(out)] if out else ["--no-run"]
    env = dict(os.environ, TRANSPILE_CACHE_DIR=str(cache))
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:])[-300:]
        raise ChildFailed(f"exit {proc.returncode}: {tail}")
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def _split(wall: float, stages: dict) -> dict:
    """The child's stages, with Python's start-up and every import before `model` as one `startup` stage."""
    later = ("model", "build", "load")
    split = {"startup": wall - sum(stages.get(k, 0.0) for k in later)}
    split.update((k, stages.get(k, 0.0)) for k in later)
    return split


def _sizes(row: Row, directory: Path) -> None:
    info = json.loads((directory / "info.json").read_text())
    library = info.get("library", "")
    for path in sorted(directory.iterdir()):
        if not path.is_file() or path.is_symlink():
            continue
        size = path.stat().st_size
        if path.name == library:
            row.library_bytes = size
        elif path.suffix in SOURCE_SUFFIXES:
            row.source_files.append(path.name)
            row.source_bytes += size
        elif path.suffix not in NOT_ARTIFACT:
            row.other_bytes += size  # e.g. a weights file beside the library


def measure(
    model: str, backend: str, weights: Path, weight_bytes: int, expected: list, repeats: int, workdir: Path, log
) -> Row:
    """First build, cache hits and sizes of one model on one backend, in a cache of its own."""
    row = Row(model, backend, weight_bytes=weight_bytes, load_before=os.getloadavg()[0])
    cache = Path(tempfile.mkdtemp(prefix=f"cache-{model}-{backend}-", dir=workdir))
    try:
        row.first_build, report = _child(model, backend, weights, cache)
        row.first_stages = report["stages"]
        log(f"  {model:13s} {backend:4s} first build {row.first_build:7.2f} s")
        for _ in range(repeats):
            wall, report = _child(model, backend, weights, cache)
            row.hits.append(wall)
            row.hit_stages = _split(wall, report["stages"])
        log(f"  {model:13s} {backend:4s} cache hit   {row.hit:7.2f} s (median of {repeats})")
        _sizes(row, Path(report["directory"]))
        out = workdir / f"out-{model}-{backend}.npz"
        _child(model, backend, weights, cache, out)
        with np.load(out) as archive:
            got = [archive[f"out_{i}"] for i in range(len(archive.files))]
        from transpile.testing.numpy_reference import relative_error

        row.error = max(relative_error(g, e) for g, e in zip(got, expected))
        if len(got) != len(expected) or row.error > TOLERANCE:
            row.status, row.reason = "WRONG", f"output differs from the numpy reference by {row.error:.2e} of its scale"
    except ChildFailed as exc:
        row.status, row.reason = "failed", str(exc)
        log(f"  {model:13s} {backend:4s} failed: {exc}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return row


def _prepare(model: str, workdir: Path) -> tuple[Path, int, list]:
    """The model's weights as an .npz (what the children load) and its numpy reference output."""
    from transpile.testing.models import load_model
    from transpile.testing.numpy_reference import reference_evaluate

    loaded = load_model(model, seed=0)
    path = workdir / f"weights-{model}.npz"
    np.savez(path, *loaded.constants)
    expected = reference_evaluate(loaded.module, *loaded.inputs(seed=1))
    flat = list(expected) if isinstance(expected, tuple) else [expected]
    return path, loaded.weight_bytes, flat


# ----- the report --------------------------------------------------------------------------------


def _mb(size: int) -> str:
    return f"{size / 1e6:.2f} MB" if size >= 1e5 else f"{size / 1e3:.1f} kB"


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def _stages(stages: dict) -> str:
    return " / ".join(f"{stages.get(k, 0):.2f}" for k in ("startup", "model", "build", "load"))


def render(rows: list[Row], command: str, repeats: int, load_start, load_end, seconds: float) -> str:
    from .report import machine_lines

    class _Run:  # machine_lines reads the load at the start from its argument
        load_at_start = " / ".join(f"{v:.2f}" for v in load_start)

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Build benchmark",
        "",
        f"Measured {when} with `{command}` from the repository root ({seconds:.0f} s).",
        "",
        "## Machine",
        "",
        *machine_lines(_Run),
        f"- Load average (1/5/15 min) at the end of this run: {' / '.join(f'{v:.2f}' for v in load_end)};"
        " the table gives the 1-minute load when each first build started. Builds are compile-bound: other"
        " work on the machine lengthens them directly.",
        "",
        "## Builds, cache hits and artifact sizes",
        "",
        "Each row starts from an empty cache of its own. *First build* and *cache hit* are wall-clock times of"
        " a whole child process (`python -m transpile.testing.run_model MODEL --backend B --weights W.npz"
        " --no-run`: imports, parse, weights read from an .npz and bound, `transpile.build`, library loaded);"
        f" the cache hit is the median of {repeats} such processes, and *hit stages* splits the last one"
        " (seconds: Python start-up and imports / parse + weights / `transpile.build` / library load)."
        " *Source* is what the backend generated (cpp: `main.cpp`; tir: `main.tir.py` + `program.c`);"
        " *other* is any further file in the artifact beside headers and `info.json`.",
        "",
        "| model | backend | first build | cache hit | hit stages | source | library | other | weights |"
        " library / weights | error | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for row in rows:
        title = f"{TITLES.get(row.model, row.model)}"
        if row.status == "failed" and row.first_build is None:
            notes.append(f"{title} on {row.backend}: {row.reason}")
            lines.append(
                f"| {title} | {row.backend} | failed [{len(notes)}] |" + " |" * 8 + f" {row.load_before:.2f} |"
            )
            continue
        status = "" if row.status == "ok" else f" {row.status} [{len(notes) + 1}]"
        if row.status != "ok":
            notes.append(f"{title} on {row.backend}: {row.reason}")
        sized = row.library_bytes > 0  # sizes are read after the cache hits
        ratio = f"{row.library_ratio:.2f}×" if sized and row.library_ratio is not None else "—"
        lines.append(
            f"| {title} | {row.backend} | {_seconds(row.first_build)}{status} | {_seconds(row.hit)} |"
            f" {_stages(row.hit_stages) if row.hit_stages else '—'} | {_mb(row.source_bytes) if sized else '—'} |"
            f" {_mb(row.library_bytes) if sized else '—'} | {_mb(row.other_bytes) if row.other_bytes else '—'} |"
            f" {_mb(row.weight_bytes)} | {ratio} | {'—' if row.error is None else f'{row.error:.1e}'} |"
            f" {row.load_before:.2f} |"
        )
    lines.append("")
    if notes:
        lines += ["## Failures", ""] + [f"{i}. {n}" for i, n in enumerate(notes, 1)] + [""]
    lines += _targets(rows)
    return "\n".join(lines)


def _targets(rows: list[Row]) -> list[str]:
    measured = {(r.model, r.backend): r for r in rows}
    lines = ["## Issue 9 targets on this run", ""]
    for model, backend, what, limit, text in TARGETS:
        row = measured.get((model, backend))
        if row is None:
            continue
        value = getattr(row, what)
        if value is None or (what in ("source_bytes", "library_ratio") and not row.library_bytes):
            lines.append(f"- {TITLES[model]} {backend}: {text} — not measured ({row.reason or 'no value'}).")
            continue
        shown = (
            _mb(value) if what.endswith("bytes") else f"{value:.2f}×" if what.endswith("ratio") else f"{value:.2f} s"
        )
        lines.append(f"- {TITLES[model]} {backend}: {text} — {shown}: {'met' if value <= limit else 'NOT met'}.")
    if len(lines) == 2:
        lines.append("No targeted (model, backend) pair was measured in this run.")
    lines.append("")
    return lines


# ----- command line ------------------------------------------------------------------------------


def comma_separated(text: str, known, what: str) -> list[str]:
    """The names in a comma-separated option, each checked against `known` (shared by the bench commands)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}(s): {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def parse_args(argv):
    from transpile.testing.models import MODELS as ALL_MODELS

    parser = argparse.ArgumentParser(prog="python -m bench builds", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models",
        default=",".join(MODELS),
        help=f"comma-separated (default {','.join(MODELS)}; also: {', '.join(m for m in ALL_MODELS if m not in MODELS)})",
    )
    parser.add_argument(
        "--backends", default=",".join(BACKENDS), help=f"comma-separated (default {','.join(BACKENDS)})"
    )
    parser.add_argument("--repeats", type=int, default=3, help="cache-hit processes per row (median; default 3)")
    parser.add_argument("--out", default="bench/BUILDS.md", help="Markdown report to write (default: bench/BUILDS.md)")
    opts = parser.parse_args(argv)
    opts.models = comma_separated(opts.models, list(ALL_MODELS), "model")
    opts.backends = comma_separated(opts.backends, list(BACKENDS), "backend")
    return opts


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    started = time.perf_counter()
    load_start = os.getloadavg()
    print(
        f"bench builds: {len(opts.models)} models x {len(opts.backends)} backends;"
        f" load average {' / '.join(f'{v:.2f}' for v in load_start)}",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="transpile-bench-builds-") as scratch:
        workdir = Path(scratch)
        for model in opts.models:
            weights, weight_bytes, expected = _prepare(model, workdir)
            for backend in opts.backends:
                rows.append(
                    measure(
                        model,
                        backend,
                        weights,
                        weight_bytes,
                        expected,
                        opts.repeats,
                        workdir,
                        lambda m: print(m, flush=True),
                    )
                )
    command = "python -m bench builds" + ("" if not argv else " " + " ".join(argv))
    text = render(rows, command, opts.repeats, load_start, os.getloadavg(), time.perf_counter() - started)
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print("\n" + text)
    print(f"wrote {out}")
    return 0 if all(r.status == "ok" for r in rows) else 1
