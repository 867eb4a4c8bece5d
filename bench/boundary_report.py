"""The Markdown report of `python -m bench boundary`: machine, List conversion, thread scaling, issue 12 figures."""

from __future__ import annotations

import datetime
import os
import platform

from .boundary import BATCH, LAYERS, WIDTH
from .report import _cpu_model, _version


def _us(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


def _loads(values) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def render(lists, building, threads, command: str, load_start, seconds: float) -> str:
    cores, busy = os.cpu_count() or 1, load_start[0] > 0.5 * (os.cpu_count() or 1)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    largest = max((n for _, n in building), default=0)
    one = {r.backend: r.rate for r in threads if r.threads == 1 and r.rate}
    lines = [
        "# Python boundary benchmark", "",
        f"Measured {when} with `{command}` from the repository root ({seconds:.0f} s).",
        "", "## Machine", "",
        f"- CPU: {_cpu_model()}, {cores} logical cores; load average (1/5/15 min) at the start:"
        f" {_loads(load_start)}, at the end: {_loads(os.getloadavg())}.",
        f"- TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS', '(unset)')} (each call on one thread: threads are the"
        f" only parallelism); Python {platform.python_version()}, numpy {_version('numpy')},"
        f" apache-tvm {_version('apache-tvm')}.",
        *([f"- **Warning**: the machine was busy (load {load_start[0]:.2f} on {cores} cores); the thread-scaling"
           " figures below do not show what the code can do."] if busy else []),
        "", "## List conversion (issue 12, item 19)", "",
        "Median wall time of one call divided by the List's length, µs per element. The programs do O(1) work, so"
        " the times are the boundary's: *in* converts the List and returns whether it is empty (`match`); *in + out*"
        " returns it (`%xs`), converted back; *out* ≈ the difference. The argument, a Prelude List of `ADTValue`s,"
        " is built beforehand; its items are 0-d int32 arrays (what the backends return), Python ints, or float32"
        " arrays of 4. The returned List is checked element by element. At small n the fixed cost of a call weighs"
        " on the figures.", "",
        "| backend | elements | n | in | in + out | out ≈ | check |", "|---|---|---|---|---|---|---|",
        *(f"| {r.backend} | {r.elements} | {r.n:,} | {_us(r.per_element('in'))} | {_us(r.per_element('in+out'))} |"
          f" {_us(r.out)} | {r.problem or 'ok'} |" for r in lists),
        "", "Building the argument in Python (`python_list`, not in the times above), µs per element: "
        + ", ".join(f"{e} n={n:,}: {s * 1e6:.2f}" for (e, n), s in building.items() if n == largest) + ".",
        "", "## One callable from several threads (issue 12, item 21)", "",
        f"A {LAYERS}-layer {WIDTH}x{WIDTH} float32 dense + bias + relu MLP, batch {BATCH}, weights as constants."
        " Each thread makes the same number of calls on its own input; the wall time runs from the threads' common"
        " start to the last one's end (median of the rounds); every thread's last result must equal the"
        " single-threaded one. *C API*: the exported cpp library called from pthreads (`bench/boundary_driver.c`)."
        f" The ideal speedup is min(threads, {cores} cores).", "",
        "| backend | threads | calls per thread | calls/s | speedup vs 1 thread | check |", "|---|---|---|---|---|---|",
        *(f"| {r.backend} | {r.threads} | {r.calls} | {r.rate:,.0f} |"
          f" {f'{r.rate / one[r.backend]:.2f}×' if r.rate and r.backend in one else '—'} | {r.problem or 'ok'} |"
          for r in threads),
        "", "## Issue 12 on this run", "",
    ]  # fmt: skip
    for backend in ("python", "cpp"):
        for elements in dict.fromkeys(r.elements for r in lists if r.elements.startswith("int32")):
            rows = [r for r in lists if (r.backend, r.elements) == (backend, elements) and r.out is not None]
            if not rows:
                continue
            small, large = rows[0], rows[-1]
            met = max(large.per_element("in"), large.out) <= 1
            lines.append(f"- Item 19, {backend}, a List of {large.n:,} {elements}: {_us(large.per_element('in'))} µs"
                         f" per element in, ≈ {_us(large.out)} out (target ≤ 1 µs: {'met' if met else 'NOT met'});"
                         f" in per element at n={large.n:,} / at n={small.n:,}:"
                         f" {large.per_element('in') / small.per_element('in'):.2f}× (≈ 1 when linear); results"
                         f" {'WRONG' if any(r.problem for r in rows) else 'right'}.")  # fmt: skip
    for backend, rate in one.items():
        best = max((r for r in threads if r.backend == backend), key=lambda r: r.rate)
        lines.append(f"- Item 21, {backend}: {rate:,.0f} calls/s on 1 thread, best {best.rate:,.0f} on {best.threads}"
                     f" ({best.rate / rate:.2f}×, ideal {min(best.threads, cores)}×); results"
                     f" {'WRONG' if any(r.problem for r in threads if r.backend == backend) else 'right'}."
                     )  # fmt: skip
    return "\n".join(lines + [""])
