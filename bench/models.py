"""`python -m bench models`: real models on transpile cpp/tir against ONNX Runtime, PyTorch eager and torch.compile.

    python -m bench models                                  # MNIST, MobileNet v2, ResNet-50; all systems
    python -m bench models --models mnist --peers cpp,ort   # filters
    python -m bench models --rounds 20 --out /tmp/m.md      # more rounds; report path

MobileNet v2 and ResNet-50 are torchvision's, imported from their ONNX export (the file ONNX
Runtime runs); MNIST is the corpus graph (bench/model_subjects.py). One process, batch 1, fp32, the same thread count for every system (`--threads`, default 2) and
passive waits for all of them. For each model: build every system (timed), check every output
before timing, warm up, then time round-robin: each round runs every system in turn (the start
rotating), so load on the machine hits all of them alike. Writes bench/MODELS.md and prints it.
"""

from __future__ import annotations

import os
import sys

# Environment every library reads once, when it loads: set before anything imports them.
PASSIVE_WAITS = {
    "OMP_WAIT_POLICY": "PASSIVE",  # PyTorch's and inductor's OpenMP threads sleep instead of spinning
    "TVM_THREAD_POOL_SPIN_COUNT": "0",  # TVM's pool (transpile's kernels) likewise
}
# Libraries whose thread pools read the environment at load; the report says if one was loaded before.
THREADED_LIBRARIES = ("torch", "tvm", "onnxruntime")

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from . import model_peers as peers  # noqa: E402
from . import model_subjects as subjects  # noqa: E402
from .builds import comma_separated  # noqa: E402

MODELS = ("mnist", "mobilenet_v2", "resnet50")  # the default run
ALL_MODELS = MODELS + ("resnet18", "mobilenet_v2_corpus", "resnet50_v2_corpus")
# Relative to the output's largest magnitude: float32 systems against a float64 reference or each other.
TOLERANCE = 1e-4
SAMPLE_SECONDS = 0.01  # a timed sample runs back-to-back calls for at least this long (timer overhead)
ROUND_SECONDS = 0.1  # and each system takes about this long per round (at least one sample)
WARMUP_SECONDS = 0.5  # untimed calls after the check (and at least two)


@dataclass
class Row:
    """One (model, system): its per-call samples in seconds, build time and check, or why it has none."""

    model: str
    system: str
    status: str = "ok"  # "ok", "n/a", "failed" or "WRONG"
    reason: str = ""
    build_seconds: float | None = None
    build_note: str = ""
    check: str = ""  # what the output was compared with, and the error
    error: float | None = None
    samples: list[float] = field(default_factory=list)

    def quantile(self, q: float) -> float | None:
        if not self.samples:
            return None
        return float(np.quantile(self.samples, q))

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


# ----- the environment ---------------------------------------------------------------------------


def configure_environment(threads: int, scratch: Path) -> list[str]:
    """Threads, passive waits and fresh compiler caches for every system; the libraries already loaded (too late for them)."""
    os.environ.update(PASSIVE_WAITS)
    for name in ("TVM_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[name] = str(threads)
    # This machine's OpenBLAS settings slow numpy's BLAS; benchmark processes run without them (DESIGN.md).
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(name, None)
    # torch.compile's first call is its build: time it against an empty inductor cache, like transpile's.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "inductor")
    return [name for name in THREADED_LIBRARIES if sys.modules.get(name) is not None]


def load_libraries(threads: int) -> None:
    """Import the systems' libraries before any build is timed, so no build time holds a one-time import.

    (`import tvm` alone takes ~3 s and imports torch; torch.compile's first use imports dynamo and inductor.)
    """
    import importlib

    for name in ("tvm", "torch", "torch._dynamo", "torch._inductor.compile_fx", "onnxruntime"):
        try:
            importlib.import_module(name)
        except Exception:  # a missing peer is reported n/a by its builder, with the reason
            pass
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


# ----- building and checking ---------------------------------------------------------------------


def _build(subject: subjects.Subject, name: str, workdir: Path, threads: int) -> peers.System:
    """Build one system for one model (NotAvailable when its package is missing)."""
    if name in ("cpp", "tir"):
        system = peers.transpile_system(name, subject.relay_module, subject.inputs, workdir / f"cache-{subject.name}-{name}")
        if subject.import_seconds is not None:
            system.build_note = f"+ {subject.import_seconds:.2f} s export and import"
        return system
    if name == "ort":
        path, exported = subjects.onnx_file(subject, workdir)
        return peers.onnxruntime_system(path, subject.inputs[0], threads, exported)
    module = subjects.peer_module(subject)
    if name == "torch":
        return peers.eager_system(module, subject.inputs[0])
    return peers.compiled_system(module, subject.inputs[0])


def _check(row: Row, output: np.ndarray, reference: np.ndarray | None, reference_name: str) -> None:
    """Compare an output with its reference (relative to the reference's scale); mark the row WRONG if off."""
    from transpile.testing.numpy_reference import relative_error

    if not np.all(np.isfinite(output)):
        row.status, row.reason = "WRONG", "the output is not finite"
        return
    if reference is None:
        row.check = "finite (the other peers' reference)"
        return
    if output.shape != reference.shape:
        row.status, row.reason = "WRONG", f"output shape {output.shape}, expected {reference.shape}"
        return
    row.error = relative_error(output, reference)
    row.check = f"{reference_name} ({row.error:.1e})"
    if row.error > TOLERANCE:
        row.status = "WRONG"
        row.reason = f"differs from {reference_name} by {row.error:.2e} of its scale (tolerance {TOLERANCE:g})"


def _recheck(row: Row, system: peers.System, first: np.ndarray) -> None:
    """After timing, the system must still give its first output (it agrees with itself)."""
    from transpile.testing.numpy_reference import relative_error

    drift = relative_error(system.output(), first)
    if drift > TOLERANCE:
        row.status, row.reason = "WRONG", f"a call after timing differs from the first by {drift:.2e} of its scale"
    else:
        row.check += "; same after timing"


# ----- timing ------------------------------------------------------------------------------------


@dataclass
class _Plan:
    """How one system is sampled: calls per sample, samples per round."""

    calls: int
    samples: int


def _warm_up(system: peers.System) -> _Plan:
    """Untimed calls (at least two, WARMUP_SECONDS); size samples and rounds from the fastest call seen."""
    fastest, spent, calls = math.inf, 0.0, 0
    while calls < 2 or spent < WARMUP_SECONDS:
        start = time.perf_counter()
        system.run()
        elapsed = time.perf_counter() - start
        fastest, spent, calls = min(fastest, elapsed), spent + elapsed, calls + 1
    per_sample = max(1, math.ceil(SAMPLE_SECONDS / fastest)) if fastest > 0 else 1000
    return _Plan(per_sample, max(1, int(ROUND_SECONDS / (per_sample * fastest))))


def _sample(system: peers.System, plan: _Plan) -> list[float]:
    """One round's samples for one system: seconds per call, averaged over each sample's calls."""
    samples = []
    run = system.run
    for _ in range(plan.samples):
        start = time.perf_counter()
        for _ in range(plan.calls):
            run()
        samples.append((time.perf_counter() - start) / plan.calls)
    return samples


def time_round_robin(systems: dict[str, peers.System], rows: dict[str, Row], rounds: int, log) -> None:
    """Interleaved timing: every round runs each system in turn, starting one further along each time."""
    plans = {name: _warm_up(system) for name, system in systems.items()}
    order = list(systems)
    gc.collect()
    gc.disable()  # a collection inside a sample would land on whichever system runs then
    try:
        for r in range(rounds):
            for name in order[r % len(order) :] + order[: r % len(order)]:
                rows[name].samples += _sample(systems[name], plans[name])
            if log and (r + 1) % max(1, rounds // 4) == 0:
                log(f"    round {r + 1}/{rounds}")
    finally:
        gc.enable()


# ----- one model ---------------------------------------------------------------------------------


def run_model(model: str, names: list[str], rounds: int, threads: int, workdir: Path, log) -> list[Row]:
    """Build, check and time every requested system on one model; rows in `names` order."""
    subject = subjects.load_subject(model, workdir)
    x = subject.inputs[0]
    cached: dict = {}

    def peer_reference() -> tuple[np.ndarray, str]:
        """What a peer's output must match: the subject's reference when it is the same function, else eager's."""
        if subjects.same_function_as_transpile(subject):
            return subject.reference, subject.reference_name
        if "eager" not in cached:
            cached["eager"] = peers.eager_system(subjects.peer_module(subject), x).output()
        return cached["eager"], "PyTorch eager"

    rows = {name: Row(model, name) for name in names}
    systems: dict[str, peers.System] = {}
    first: dict[str, np.ndarray] = {}
    for name in names:
        row = rows[name]
        try:
            system = _build(subject, name, workdir, threads)
            output = system.output()
            if name in ("cpp", "tir"):
                expected, expected_name = subject.reference, subject.reference_name
            elif name == "torch" and not subjects.same_function_as_transpile(subject):
                expected, expected_name = None, ""  # eager is the other peers' reference: finite is all it can show
            else:
                expected, expected_name = peer_reference()
        except peers.NotAvailable as exc:
            row.status, row.reason = "n/a", str(exc)
            log(f"  {model:13s} {name:8s} n/a: {exc}")
            continue
        except Exception as exc:  # a system that fails must not stop the others
            row.status, row.reason = "failed", f"{type(exc).__name__}: {str(exc).strip()[:300]}"
            log(f"  {model:13s} {name:8s} failed: {row.reason}")
            traceback.print_exc()
            continue
        row.build_seconds, row.build_note = system.build_seconds, system.build_note
        _check(row, output, expected, expected_name)
        built = "" if row.build_seconds is None else f"built in {row.build_seconds:.2f} s, "
        log(f"  {model:13s} {name:8s} {built}{row.status}: {row.check or row.reason}")
        if row.status == "ok":
            systems[name], first[name] = system, output
    if systems:
        log(f"  {model}: timing {', '.join(systems)} for {rounds} rounds")
        time_round_robin({n: systems[n] for n in names if n in systems}, rows, rounds, log)
        for name, system in systems.items():
            _recheck(rows[name], system, first[name])
    return [rows[name] for name in names]


# ----- the report --------------------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def _build_text(row: Row) -> str:
    if row.build_seconds is None:
        return "—"
    seconds = f"{row.build_seconds:.2f} s" if row.build_seconds >= 1 else _ms(row.build_seconds)
    return seconds + (f" ({row.build_note})" if row.build_note else "")


def render_table(rows: list[Row]) -> tuple[list[str], list[str]]:
    """The Markdown table (one line per row) and its numbered notes (n/a reasons, failures)."""
    lines = [
        "| model | system | median | p10 | p90 | × best | build | output check |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    best = {}
    for row in rows:
        if row.status == "ok" and row.median is not None:
            best[row.model] = min(best.get(row.model, math.inf), row.median)
    for row in rows:
        title, system = subjects.title(row.model), peers.TITLES[row.system]
        if row.status != "ok":
            notes.append(f"{title}, {system}: {row.reason}")
            label = f"{row.status} [{len(notes)}]"
            check = row.check or "—"
            lines.append(f"| {title} | {system} | {label} | | | | {_build_text(row)} | {check} |")
            continue
        ratio = f"{row.median / best[row.model]:.2f}×" if row.model in best else "—"
        lines.append(
            f"| {title} | {system} | {_ms(row.median)} | {_ms(row.quantile(0.1))} | {_ms(row.quantile(0.9))} |"
            f" {ratio} | {_build_text(row)} | {row.check} |"
        )
    return lines, notes


def _machine_lines(threads: int, load_start, load_end, preloaded: list[str]) -> list[str]:
    from .report import _cpu_model, _gxx, _version

    def load(values):
        return " / ".join(f"{v:.2f}" for v in values)

    versions = ", ".join(
        f"{dist} {_version(dist)}" for dist in ("torch", "torchvision", "onnxruntime", "onnx", "apache-tvm", "numpy")
    )
    late = (
        f" (but {', '.join(preloaded)} had loaded before the environment was set: its pool may not honour it)"
        if preloaded
        else ""
    )
    return [
        f"- CPU: {_cpu_model()}, {os.cpu_count()} logical cores. Load average (1/5/15 min) at the start:"
        f" {load(load_start)}; at the end: {load(load_end)}. Other work on the machine slows every system,"
        " multi-threaded ones most; the interleaving spreads it over all of them.",
        f"- Threads: {threads} for every system — TVM_NUM_THREADS and OMP_NUM_THREADS={threads},"
        f" `torch.set_num_threads({threads})`, ONNX Runtime `intra_op_num_threads={threads}` (inter-op 1)."
        " Passive waits for all: OMP_WAIT_POLICY=PASSIVE, TVM_THREAD_POOL_SPIN_COUNT=0, ONNX Runtime"
        f" `session.intra_op.allow_spinning=0`; set before any of them loaded{late}.",
        f"- {versions}, transpile {_version('transpile')}, {_gxx()}.",
    ]


def render(rows: list[Row], command: str, opts, load_start, load_end, preloaded, seconds: float) -> str:
    """bench/MODELS.md: how it was measured, the machine, the table and its notes."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table, notes = render_table(rows)
    models = list(dict.fromkeys(row.model for row in rows))
    lines = [
        "# Real models against ONNX Runtime, PyTorch eager and torch.compile",
        "",
        f"Measured {when} with `{command}` from the repository root ({seconds:.0f} s).",
        "",
        "## Method",
        "",
        "Batch 1, float32, one process. Every system is built (timed: *build*), its output checked, then"
        f" warmed up ({WARMUP_SECONDS:g} s, at least two calls). Timing is interleaved: {opts.rounds} rounds,"
        " each running every system in turn (starting one further along each round), each system about"
        f" {ROUND_SECONDS * 1e3:.0f} ms per round in samples of back-to-back calls of at least"
        f" {SAMPLE_SECONDS * 1e3:.0f} ms (at least one call). *median*, *p10*, *p90*: over the samples, per call;"
        " *× best*: the median over the best median for the model. Garbage collection is off while timing.",
        "",
        "- *build*: transpile — `transpile.build` + load in an empty cache folder (a first build);"
        " ONNX Runtime — creating the session, all graph optimisations (the `torch.onnx.export` before it in"
        " brackets); torch.compile — its first call, which compiles, against an empty inductor cache;"
        " PyTorch eager — nothing. The libraries are imported before any build is timed.",
        "- *output check*, before timing and again after, within"
        f" {TOLERANCE:g} of the output's scale: on the torchvision models every system against the module"
        " evaluated in float64 by PyTorch (same function, weights and input for all); on MNIST every system"
        " against the independent float64 numpy evaluation of the corpus graph"
        " (`transpile.testing.numpy_reference`). On a corpus variant of a torchvision model, transpile against"
        " that numpy reference, and the peers (a different graph) against PyTorch eager, whose output must be finite.",
        "",
        "## Machine",
        "",
        *_machine_lines(opts.threads, load_start, load_end, preloaded),
        "",
        "## What runs",
        "",
        "Every system gets the same N(0, 1) input (seed 1). A corpus graph runs with the sensible random weights of"
        " `transpile.testing.models` (He-scaled convolutions, positive batch-norm variances; seed 0).",
        "",
        *[f"- {subjects.title(m)}: {peers.PEER_ARCHITECTURES[m]}." for m in models],
        "",
        "## Times",
        "",
        *table,
        "",
    ]
    if notes:
        lines += [f"{i}. {note}" for i, note in enumerate(notes, 1)] + [""]
    return "\n".join(lines)


# ----- command line ------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m bench models", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models",
        default=",".join(MODELS),
        help=f"comma-separated, of {','.join(ALL_MODELS)} (default {','.join(MODELS)})",
    )
    parser.add_argument(
        "--peers",
        default=",".join(peers.SYSTEMS),
        help=f"systems, comma-separated (default {','.join(peers.SYSTEMS)}: transpile cpp, transpile tir,"
        " ONNX Runtime, PyTorch eager, torch.compile)",
    )
    parser.add_argument("--rounds", type=int, default=10, help="interleaved timing rounds (default 10)")
    parser.add_argument("--threads", type=int, default=2, help="threads for every system (default 2)")
    parser.add_argument("--out", default="bench/MODELS.md", help="Markdown report to write (default: bench/MODELS.md)")
    opts = parser.parse_args(argv)
    opts.models = comma_separated(opts.models, ALL_MODELS, "model")
    opts.peers = comma_separated(opts.peers, peers.SYSTEMS, "system")
    if opts.rounds < 1 or opts.threads < 1:
        raise SystemExit("--rounds and --threads must be at least 1")
    return opts


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    started = time.perf_counter()
    load_start = os.getloadavg()
    scratch = Path(tempfile.mkdtemp(prefix="transpile-bench-models-"))
    preloaded = configure_environment(opts.threads, scratch)
    load_libraries(opts.threads)
    print(
        f"bench models: {', '.join(opts.models)} on {', '.join(opts.peers)}; {opts.threads} threads;"
        f" load average {' / '.join(f'{v:.2f}' for v in load_start)}",
        flush=True,
    )
    rows: list[Row] = []
    try:
        for model in opts.models:
            rows += run_model(model, opts.peers, opts.rounds, opts.threads, scratch, lambda m: print(m, flush=True))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    command = "python -m bench models" + ("" if not argv else " " + " ".join(argv))
    text = render(rows, command, opts, load_start, os.getloadavg(), preloaded, time.perf_counter() - started)
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print("\n" + text)
    print(f"wrote {out}")
    return 0 if all(row.status in ("ok", "n/a") for row in rows) else 1
