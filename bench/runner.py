"""`python -m bench`: build every peer, check its output against the reference, time it, write RESULTS.md."""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import timing
from .workloads import Native, NotApplicable, Workload, all_workloads

TRANSPILE_PEERS = ("cpp", "tir", "python", "interpreter")
NATIVE_PEERS = ("relax", "numpy", "torch", "torch1")
ALL_PEERS = TRANSPILE_PEERS + NATIVE_PEERS
PEER_TITLES = {
    "cpp": "cpp",
    "tir": "tir",
    "python": "python",
    "interpreter": "interpreter",
    "relax": "Relax VM",
    "numpy": "numpy / Python",
    "torch": "PyTorch eager",
    "torch1": "PyTorch eager, 1 thread",
}


class Mismatch(AssertionError):
    """A peer's output disagrees with the reference result."""


@dataclass
class Cell:
    """One (workload, peer) measurement or the reason there is none."""

    status: str  # "ok", "n/a", "failed" or "WRONG"
    seconds: float | None = None  # median per call at the full size
    reason: str = ""
    extrapolated_from: str | None = None  # size label when timed on the small instance and scaled
    build_seconds: float | None = None
    calls: int = 0
    note: str = ""


@dataclass
class Run:
    workloads: list[Workload]
    peers: list[str]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    peer_notes: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    load_at_start: str = field(default_factory=lambda: " / ".join(f"{v:.2f}" for v in os.getloadavg()))


def check(result, expected, workload: Workload, peer: str, label: str) -> None:
    """Raise Mismatch unless `result` equals the reference (integers exactly, floats within tolerance)."""
    got, want = np.asarray(result), np.asarray(expected)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise Mismatch(
            f"{peer} on {workload.name} ({label}): got {got.dtype}{list(got.shape)}, "
            f"expected {want.dtype}{list(want.shape)}"
        )
    if np.issubdtype(want.dtype, np.floating):
        if not np.allclose(got, want, rtol=workload.rtol, atol=workload.atol):
            worst = float(np.max(np.abs(got.astype(np.float64) - want)))
            raise Mismatch(
                f"{peer} on {workload.name} ({label}): max abs error {worst:.3g} exceeds "
                f"rtol={workload.rtol}, atol={workload.atol}"
            )
    elif not np.array_equal(got, want):
        raise Mismatch(f"{peer} on {workload.name} ({label}): got {got.tolist()}, expected {want.tolist()}")


def _short(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- peers
def transpile_backend_status(name: str) -> tuple[bool, str]:
    """(usable, note) for a transpile backend; cpp falls back to in-process registration if not installed yet."""
    from transpile.backends import get_backend

    try:
        get_backend(name)
        return True, ""
    except Exception as exc:
        first_error = _short(exc)
    if name == "cpp":
        try:
            import importlib

            from transpile.backends import Backend, register_backend

            package = importlib.import_module("transpile.backends.cpp")
            classes = [
                v
                for v in vars(package).values()
                if isinstance(v, type) and issubclass(v, Backend) and getattr(v, "name", None) == "cpp"
            ]
            if classes:
                register_backend("cpp", classes[0])
                get_backend("cpp")
                return True, "registered in-process from transpile.backends.cpp (no entry point installed)"
        except Exception as exc:
            return False, f"n/a (backend not usable yet: {first_error}; in-process import: {_short(exc, 100)})"
    return False, f"n/a (backend not usable: {first_error})"


def transpile_native(workload: Workload, backend: str) -> Native:
    import transpile

    return Native(call=transpile.compile(workload.build_module(), backend=backend))


# ---------------------------------------------------------------- one cell
def _timed_call(native: Native, args: tuple):
    converted = native.convert_in(args)
    start = time.perf_counter()
    result = native.call(*converted)
    return native.convert_out(result), time.perf_counter() - start, converted


def run_cell(workload: Workload, peer: str, native: Native, policy, max_call: float, keep_going: bool) -> Cell:
    cell = Cell("ok", note=native.note)
    try:
        full = workload.full
        if workload.small is not None:
            small = workload.small
            result, _, converted = _timed_call(native, small.args)
            check(result, small.expected, workload, peer, small.label)
            start = time.perf_counter()
            native.call(*converted)  # a second call: the first may include one-time setup
            estimate = (time.perf_counter() - start) * full.work / small.work
            if estimate > max_call:
                measured = timing.measure(native.call, converted, policy)
                cell.seconds = measured.median * full.work / small.work
                cell.calls = measured.calls
                cell.extrapolated_from = small.label
                return cell
        result, _, converted = _timed_call(native, full.args)
        check(result, full.expected, workload, peer, full.label)
        measured = timing.measure(native.call, converted, policy)
        cell.seconds, cell.calls = measured.median, measured.calls
        return cell
    except Mismatch as exc:
        if not keep_going:
            raise
        return Cell("WRONG", reason=str(exc))
    except RecursionError as exc:
        return Cell("failed", reason=_short(exc))
    except Exception as exc:  # a peer that crashes at run time is reported, not fatal
        return Cell("failed", reason=_short(exc))


def make_native(workload: Workload, peer: str) -> Native:
    if peer in TRANSPILE_PEERS:
        from transpile.errors import UnsupportedFeatureError

        try:
            return transpile_native(workload, peer)
        except UnsupportedFeatureError as exc:  # e.g. tir on a program with ADTs
            raise NotApplicable(f"n/a (needs {exc.feature}, which backend {peer} lacks)") from exc
    factory = workload.natives.get(peer)
    if factory is None:
        raise NotApplicable(workload.not_applicable.get(peer, "n/a (no version of this workload)"))
    return factory()


def run(workloads: list[Workload], peers: list[str], policy, max_call: float, keep_going: bool, log) -> Run:
    started = time.perf_counter()
    outcome = Run(workloads, peers)
    unusable = {}
    for peer in peers:
        if peer in TRANSPILE_PEERS:
            usable, note = transpile_backend_status(peer)
            if not usable:
                unusable[peer] = note
            elif note:
                outcome.peer_notes[peer] = note
    if "torch" in peers or "torch1" in peers:
        from .torch_peer import available

        reason = available()
        if reason:
            unusable["torch"] = unusable["torch1"] = reason
    for workload in workloads:
        for peer in peers:
            if peer in unusable:
                cell = Cell("n/a", reason=unusable[peer])
            else:
                start = time.perf_counter()
                try:
                    native = make_native(workload, peer)
                except NotApplicable as exc:
                    cell = Cell("n/a", reason=str(exc))
                except Exception as exc:
                    if log:
                        traceback.print_exc(limit=3, file=log)
                    cell = Cell("failed", reason=f"build failed: {_short(exc)}")
                else:
                    build_seconds = time.perf_counter() - start
                    cell = run_cell(workload, peer, native, policy, max_call, keep_going)
                    cell.build_seconds = build_seconds
            outcome.cells[workload.name, peer] = cell
            if log:
                shown = timing.format_seconds(cell.seconds) if cell.seconds is not None else cell.reason
                mark = f" (≈ from {cell.extrapolated_from})" if cell.extrapolated_from else ""
                print(f"  {workload.name:10s} {peer:12s} {cell.status:6s} {shown}{mark}", file=log, flush=True)
    outcome.seconds = time.perf_counter() - started
    return outcome


# ---------------------------------------------------------------- command line
def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and a lower per-call cap (~1 min)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="WORKLOAD",
        help="run only this workload (repeatable; comma-separated lists work too)",
    )
    parser.add_argument(
        "--peers",
        default=",".join(ALL_PEERS),
        help=f"comma-separated peers to compare (default: {','.join(ALL_PEERS)})",
    )
    parser.add_argument(
        "--out", default="bench/RESULTS.md", help="Markdown report to write (default: bench/RESULTS.md)"
    )
    parser.add_argument(
        "--max-call",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a peer whose full-size call would take longer is timed on the workload's smaller "
        "instance and scaled by work (default 2 s, 0.3 s with --quick)",
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="record a peer whose output disagrees with the reference as WRONG instead of stopping",
    )
    parser.add_argument("--list", action="store_true", help="list the workloads and peers and exit")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    workloads = all_workloads()
    if opts.list:
        for w in workloads:
            print(f"{w.name:10s} {w.group:9s} {w.title}")
        print("peers:", ", ".join(ALL_PEERS))
        return 0
    if opts.only:
        wanted = {name.strip() for item in opts.only for name in item.split(",") if name.strip()}
        unknown = wanted - {w.name for w in workloads}
        if unknown:
            print(
                f"unknown workload(s): {', '.join(sorted(unknown))}; known: {', '.join(w.name for w in workloads)}",
                file=sys.stderr,
            )
            return 2
        workloads = [w for w in workloads if w.name in wanted]
    peers = [p.strip() for p in opts.peers.split(",") if p.strip()]
    unknown = [p for p in peers if p not in ALL_PEERS]
    if unknown:
        print(f"unknown peer(s): {', '.join(unknown)}; known: {', '.join(ALL_PEERS)}", file=sys.stderr)
        return 2
    policy = timing.QUICK if opts.quick else timing.FULL
    max_call = opts.max_call if opts.max_call is not None else (0.3 if opts.quick else 2.0)
    print(f"bench: {len(workloads)} workloads x {len(peers)} peers ({'quick' if opts.quick else 'full'})", flush=True)
    try:
        outcome = run(workloads, peers, policy, max_call, opts.keep_going, log=sys.stdout)
    except Mismatch as exc:
        print(f"\nbench: WRONG RESULT — {exc}\n(rerun with --keep-going to record it in the table)", file=sys.stderr)
        return 1
    from .report import render

    command = "python -m bench" + ("" if not argv else " " + " ".join(argv))
    text = render(outcome, command=command, quick=opts.quick, max_call=max_call)
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"\nwrote {out} ({outcome.seconds:.0f} s)")
    wrong = [key for key, cell in outcome.cells.items() if cell.status == "WRONG"]
    return 1 if wrong else 0
