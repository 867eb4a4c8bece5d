"""RESULTS.md: machine info, the exact command, median times with ratios, n/a reasons and the issue's targets."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from importlib import metadata

from .runner import PEER_TITLES, Run
from .timing import format_seconds


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _gxx() -> str:
    try:
        out = subprocess.run(["g++", "--version"], capture_output=True, text=True, timeout=10).stdout
        return out.splitlines()[0] if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "not found"


def _host_target() -> str:
    try:
        from .relax_peer import host_target

        target = host_target()
        return f"llvm, mcpu={target.attrs['mcpu']}"
    except Exception as exc:  # no tvm: the report still gets written
        return f"unknown ({type(exc).__name__})"


def machine_lines(run: Run) -> list[str]:
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    return [
        f"- CPU: {_cpu_model()}, {os.cpu_count()} logical cores; load average (1/5/15 min) at the start:"
        f" {run.load_at_start}, at the end: {load}. With other work on the machine, multi-threaded peers"
        " (TVM thread pool, PyTorch, OpenBLAS) lose the most: their spinning threads wait for a busy core.",
        f"- Threads: TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS', '(unset)')} for the TVM-based peers (cpp and tir"
        ' kernels, Relax VM) and the "PyTorch eager" column; 1 for "PyTorch eager, 1 thread"; numpy\'s BLAS default.',
        f"- Host target for TVM code: {_host_target()}",
        f"- Python {platform.python_version()}, numpy {_version('numpy')}, apache-tvm {_version('apache-tvm')},"
        f" apache-tvm-ffi {_version('apache-tvm-ffi')}, torch {_version('torch')}, transpile {_version('transpile')},"
        f" {_gxx()}",
        f"- OS: {platform.platform()}",
    ]


def _cell_text(run: Run, workload, peer: str, best: float | None, notes: dict[str, int]) -> str:
    cell = run.cells[workload.name, peer]
    if cell.status != "ok":
        key = cell.reason or cell.status
        number = notes.setdefault(key, len(notes) + 1)
        label = "n/a" if cell.status == "n/a" else cell.status
        return f"{label} [{number}]"
    text = format_seconds(cell.seconds)
    if cell.extrapolated_from:
        text = f"≈{text}"
    if best:
        text += f" ({cell.seconds / best:.2f}×)" if cell.seconds / best < 100 else f" ({cell.seconds / best:.0f}×)"
    return text


def _best(run: Run, workload) -> tuple[float | None, str | None]:
    timed = [(run.cells[workload.name, p].seconds, p) for p in run.peers if run.cells[workload.name, p].status == "ok"]
    return min(timed) if timed else (None, None)


def _ratio(a: float, b: float) -> str:
    r = a / b
    return f"{r:.2f}×" if r < 100 else f"{r:,.0f}×"


def render(run: Run, command: str, quick: bool, max_call: float) -> str:
    notes: dict[str, int] = {}
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmark results",
        "",
        f"Measured {when} with `{command}` from the repository root"
        f" ({'quick mode' if quick else 'full run'}, {run.seconds:.0f} s in one process).",
        "",
        "## Machine",
        "",
        *machine_lines(run),
        "",
        "## Median time per call",
        "",
        "Every peer's output was checked against the reference (numpy, or the closed form for the dispatch"
        " workloads) before timing. Each cell: median seconds per call, and in parentheses the ratio to the"
        " fastest peer of that row (1.00× = fastest). `≈` marks a peer too slow for the full size"
        f" (estimated > {max_call:g} s per call): it was timed on the workload's smaller instance and scaled"
        " linearly by recursion steps (listed under the table).",
        "",
    ]
    header = ["workload"] + [PEER_TITLES[p] for p in run.peers] + ["best"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for workload in run.workloads:
        best, best_peer = _best(run, workload)
        row = [f"`{workload.name}` {workload.title}"]
        row += [_cell_text(run, workload, p, best, notes) for p in run.peers]
        row.append(PEER_TITLES[best_peer] if best_peer else "—")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")

    if "cpp" in run.peers:
        lines += ["## Ratio to cpp", "", "Peer time divided by cpp time (> 1: cpp is faster).", ""]
        others = [p for p in run.peers if p != "cpp"]
        lines.append("| workload | " + " | ".join(PEER_TITLES[p] for p in others) + " |")
        lines.append("|---|" + "---|" * len(others))
        for workload in run.workloads:
            cpp = run.cells[workload.name, "cpp"]
            if cpp.status != "ok":
                row = ["cpp n/a"] * len(others)
            else:
                row = []
                for p in others:
                    cell = run.cells[workload.name, p]
                    row.append(_ratio(cell.seconds, cpp.seconds) if cell.status == "ok" else "—")
            lines.append(f"| `{workload.name}` | " + " | ".join(row) + " |")
        lines.append("")

    extrapolated = [
        (w, p, run.cells[w.name, p]) for w in run.workloads for p in run.peers if run.cells[w.name, p].extrapolated_from
    ]
    if extrapolated:
        lines += ["## Scaled measurements", ""]
        for w, p, cell in extrapolated:
            lines.append(
                f"- {PEER_TITLES[p]} on `{w.name}`: timed at {cell.extrapolated_from}"
                f" ({w.small.work:g} steps) and scaled ×{w.full.work / w.small.work:.4g} to {w.full.label}."
            )
        lines.append(
            "- Linear scaling is a lower bound when the cost per step grows with recursion depth (the"
            " interpreter's non-tail calls do: 10× more loop steps cost it about 14× more time)."
        )
        lines.append("")

    if notes:
        lines += ["## Not measured", ""]
        for reason, number in notes.items():
            lines.append(f"{number}. {reason}")
        lines.append("")

    peer_notes = dict(run.peer_notes)
    grouped: dict[tuple[str, str], list[str]] = {}
    for w in run.workloads:
        for p in run.peers:
            cell = run.cells[w.name, p]
            if cell.note and not cell.note.endswith("thread(s)"):  # thread counts are in the column titles
                grouped.setdefault((p, cell.note), []).append(w.name)
    for (p, note), names in grouped.items():
        peer_notes[f"{PEER_TITLES[p]} on {', '.join(f'`{n}`' for n in names)}"] = note
    lines += ["## How each peer runs", ""]
    lines += [
        "- cpp / tir / python / interpreter: `transpile.compile(mod, backend=...)` on the Relay program in"
        " `bench/workloads/`; arguments (numpy arrays, `ADTValue` lists and trees) are converted by the"
        " callable on every call, as a user would call it.",
        "- Relax VM: apache-tvm 0.27, "
        + _relax_note()
        + "; inputs converted to `tvm.runtime.Tensor` once, before timing.",
        "- numpy / Python: direct numpy code for the models; plain Python for the scalar/ADT dispatch workloads"
        " (a while loop for the tail-recursive loop, recursion for fib and nat_add, functools.reduce for foldl).",
        "- PyTorch eager: `torch.nn.functional` / `nn.LSTMCell` under `torch.inference_mode()`, inputs converted"
        " once before timing; TreeLSTM recurses over the tree in Python.",
    ]
    for key, note in sorted(peer_notes.items()):
        lines.append(f"- {key}: {note}")
    lines.append("")

    lines += _targets(run)
    lines += _build_times(run)
    return "\n".join(lines)


def _relax_note() -> str:
    from .relax_peer import PIPELINE_NOTE

    return f"pipeline {PIPELINE_NOTE}, host target with the vector ISA, weights bound as constants"


def _targets(run: Run) -> list[str]:
    """The issue's performance targets, evaluated on this run's numbers."""

    def ok(name, peer):
        cell = run.cells.get((name, peer))
        return cell.seconds if cell is not None and cell.status == "ok" else None

    names = {w.name: w for w in run.workloads}
    lines = ["## Issue 4 targets on this run", ""]
    if ok(next(iter(names), ""), "cpp") is None and not any(ok(n, "cpp") for n in names):
        return lines + ["cpp was not measured in this run; targets not evaluated.", ""]
    for name in ("loop", "fib", "nat_add", "foldl_sum"):
        if name not in names:
            continue
        cpp, interp = ok(name, "cpp"), ok(name, "interpreter")
        if cpp is None:
            lines.append(f"- `{name}`: cpp not measured.")
            continue
        per_step = cpp / names[name].full.work
        speedup = f"{interp / cpp:,.0f}× faster than the interpreter" if interp else "interpreter not measured"
        folded = " (under 1 ns: the C++ compiler folded the loop)" if per_step < 1e-9 else ""
        step_ns = per_step * 1e9
        step_text = f"{step_ns:.0f}" if step_ns >= 10 else f"{step_ns:.2g}"
        lines.append(
            f"- `{name}`: {speedup} (target ≥ 100×); {step_text} ns per recursion step" f" (target ≤ 200 ns){folded}."
        )
    for name in ("treelstm", "lstm"):
        if name not in names or ok(name, "cpp") is None:
            continue
        cpp = ok(name, "cpp")
        parts = [f"{PEER_TITLES[p]} {_ratio(ok(name, p), cpp)}" for p in ("torch", "torch1", "relax") if ok(name, p)]
        lines.append(f"- `{name}`: peer time / cpp time: {', '.join(parts) or 'no peer measured'} (target > 1).")
    for name in ("mlp_b1", "mlp_b64", "cnn"):
        if name not in names or ok(name, "cpp") is None:
            continue
        best, best_peer = min((ok(name, p), p) for p in run.peers if p != "cpp" and ok(name, p)) or (None, None)
        lines.append(
            f"- `{name}`: cpp / best other peer ({PEER_TITLES[best_peer]}) = {_ratio(ok(name, 'cpp'), best)}"
            f" (target ≤ 1.2×)."
        )
    lines.append("")
    return lines


def _build_times(run: Run) -> list[str]:
    lines = [
        "## Build time (compile, not timed above)",
        "",
        "cpp (transpile's build cache) and the Relax VM (`~/.cache/transpile-bench/relax`) keep compiled libraries"
        " on disk, so after a first run their builds are mostly cache hits.",
        "",
        "| workload | " + " | ".join(PEER_TITLES[p] for p in run.peers) + " |",
        "|---|" + "---|" * len(run.peers),
    ]
    for w in run.workloads:
        row = []
        for p in run.peers:
            cell = run.cells[w.name, p]
            row.append(f"{cell.build_seconds:.2f} s" if cell.build_seconds is not None else "—")
        lines.append(f"| `{w.name}` | " + " | ".join(row) + " |")
    lines.append("")
    return lines
