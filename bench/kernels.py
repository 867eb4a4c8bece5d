"""`python -m bench kernels --model NAME`: where a model's time goes, kernel by kernel.

Builds the model's kernels the way the cpp backend does (shared pipeline -> LIR kernels ->
`transpile.kernels.build.build_kernels`), runs the straight-line `main` once through the compiled
kernels to capture each kernel's real inputs, then times every distinct kernel alone on those
inputs: interleaved repetitions (every kernel once per round, so a load spike hits all of them),
median per kernel, weighted by how often `main` calls it. Reports ms, share and GFLOP/s
(`transpile.kernels.flops`). `--model-latency` also times the whole model built by the cpp backend;
`--in-program` also profiles it inside real runs (`transpile.profiling`: a profiling build timing
each kernel call), where kernels meet each other's cache state and the program's own overhead.

    python -m bench kernels --model resnet50_v2 [--top 20] [--rounds 5] [--json out.json]
    python -m bench kernels --model mobilenet_v2 --compare before.json --model-latency
"""

from __future__ import annotations

import os

# Passive waits: a spinning pool steals the core of the thread it waits for on a shared machine.
os.environ.setdefault("TVM_THREAD_POOL_SPIN_COUNT", "0")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

# Each timed sample runs a kernel at least this long (timer and call overhead stay < 1 %).
SAMPLE_SECONDS = 2e-3


@dataclass
class KernelTiming:
    """One distinct kernel: what it is, how often main calls it, its median time per call."""

    name: str
    signature: str  # the counted operator and its shapes, stable across schedule and fusion changes
    ops: str
    schedule: str
    calls: int
    seconds: float  # median per call
    flops: int | None  # per call

    @property
    def total(self) -> float:
        return self.seconds * self.calls

    @property
    def gflops(self) -> float | None:
        return self.flops / self.seconds / 1e9 if self.flops and self.seconds > 0 else None


# ----- the program and its kernels ------------------------------------------------------------


def _pipeline_alters_layout() -> bool:
    try:
        from transpile.relay.transform import optimization_passes
    except ImportError:  # a tree without the graph-level passes
        return False
    return "AlterOpLayout" in [p.name for p in optimization_passes().passes]


def prepared_module(model, layout: str):
    """The model's module; for layout "packed" with a pipeline that does not run AlterOpLayout
    itself, already through optimize + AlterOpLayout (the pipeline's optimize then only folds the
    re-packed weights)."""
    if layout != "packed" or _pipeline_alters_layout():
        return model.module
    from transpile.relay import transform

    return transform.AlterOpLayout()(transform.optimize(model.module))


def layout_scope(layout: str):
    """The context to lower and build in: with layout "nchw", AlterOpLayout switched off."""
    if layout != "nchw" or not _pipeline_alters_layout():
        return contextlib.nullcontext()
    from transpile.relay.transform import PassContext

    return PassContext(disabled_pass=["AlterOpLayout"])


def lower_model(model_name: str, seed: int = 0, layout: str = "packed"):
    """(model, LIR program) of a corpus model with its sensible random weights."""
    from transpile.pipeline import lower_to_lir
    from transpile.testing.models import load_model

    model = load_model(model_name, seed=seed)
    with layout_scope(layout):
        return model, lower_to_lir(prepared_module(model, layout))


def entry_function(program):
    return next(f for f in program.functions if f.name == program.entry)


def kernel_calls(program) -> Counter:
    """How often the entry function calls each kernel (the models are straight-line code)."""
    from transpile.lir.nodes import KernelCall
    from transpile.lir.walk import iter_lets

    return Counter(let.value.kernel for let in iter_lets(entry_function(program).body) if isinstance(let.value, KernelCall))


def signature(kernel) -> str:
    """`conv 1x1/1 64->256 56x56` (layout-free): the profiler's description of a kernel."""
    from transpile.profiling import kernel_signature

    return kernel_signature(kernel)


# ----- running main once to capture real kernel inputs ------------------------------------------


def _tensor(array):
    import tvm

    # A fresh tvm tensor is 64-byte aligned, as the kernels assume.
    return tvm.runtime.tensor(np.ascontiguousarray(array))


def capture_inputs(program, library, inputs) -> dict:
    """{kernel name: (input tensors, output tensors)} of each kernel's first call, from one run of main."""
    import tvm

    from transpile.kernels.lower import result_types
    from transpile.lir.nodes import AtomValue, ConstRef, KernelCall, Literal, MakeTuple, Proj, Var
    from transpile.lir.walk import iter_lets

    main = entry_function(program)
    kernels = {k.name: k for k in program.kernels}
    constants = {c.name: c for c in program.constants}
    values = {p.name: _tensor(x) for p, x in zip(main.params, inputs)}
    const_tensors: dict = {}

    def atom(a):
        if isinstance(a, Var):
            return values[a.name]
        if isinstance(a, ConstRef):
            if a.name not in const_tensors:
                const_tensors[a.name] = _tensor(constants[a.name].value)
            return const_tensors[a.name]
        if isinstance(a, Literal):
            return _tensor(a.numpy())
        raise TypeError(f"unexpected atom {a!r}")

    captured = {}
    for let in iter_lets(main.body):
        value = let.value
        if isinstance(value, KernelCall):
            kernel = kernels[value.kernel]
            args = [atom(a) for a in value.args]
            outs = [tvm.runtime.empty(tuple(int(d) for d in t.shape), t.dtype) for t in result_types(kernel)]
            library.module[kernel.name](*args, *outs)
            captured.setdefault(kernel.name, (args, outs))
            values[let.var.name] = outs[0] if len(outs) == 1 else tuple(outs)
        elif isinstance(value, AtomValue):
            values[let.var.name] = atom(value.atom)
        elif isinstance(value, MakeTuple):
            values[let.var.name] = tuple(atom(f) for f in value.fields)
        elif isinstance(value, Proj):
            values[let.var.name] = atom(value.tuple_value)[value.index]
        else:
            raise NotImplementedError(f"bench kernels runs straight-line programs only, found {type(value).__name__}")
    return captured


# ----- timing --------------------------------------------------------------------------------


def time_kernels(library, captured: dict, rounds: int) -> dict:
    """Median seconds per call of each captured kernel; rounds interleave the kernels."""
    functions = {name: library.module[name] for name in captured}
    batch = {}
    for name, (args, outs) in captured.items():
        f = functions[name]
        f(*args, *outs)  # warm-up (page faults, thread pool start)
        start = time.perf_counter()
        f(*args, *outs)
        single = time.perf_counter() - start
        batch[name] = max(1, int(SAMPLE_SECONDS / single)) if single > 0 else 100
    samples: dict = {name: [] for name in captured}
    for _ in range(rounds):
        for name, (args, outs) in captured.items():
            f, n = functions[name], batch[name]
            start = time.perf_counter()
            for _ in range(n):
                f(*args, *outs)
            samples[name].append((time.perf_counter() - start) / n)
    return {name: statistics.median(s) for name, s in samples.items()}


def profile_model(model_name: str, rounds: int = 5, seed: int = 0, layout: str = "packed") -> tuple[list[KernelTiming], dict]:
    """Per-kernel timings of a corpus model (sorted by total time, largest first) and facts about the run."""
    model, program = lower_model(model_name, seed, layout)
    rows, facts = profile_program(program, model.inputs(), rounds)
    return rows, {"model": model.name, "layout": layout, **facts}


def profile_program(program, inputs, rounds: int = 5) -> tuple[list[KernelTiming], dict]:
    """Per-kernel timings of a straight-line LIR program run on `inputs` (numpy arrays for main)."""
    from transpile.kernels.build import build_kernels
    from transpile.kernels.flops import kernel_flops

    calls = kernel_calls(program)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-kernels-") as tmp:
        library = build_kernels(program.kernels, tmp)
    build_seconds = time.perf_counter() - started
    captured = capture_inputs(program, library, inputs)
    medians = time_kernels(library, captured, rounds)
    rows = []
    for kernel in program.kernels:
        if kernel.name not in medians:
            continue
        rows.append(
            KernelTiming(
                name=kernel.name,
                signature=signature(kernel),
                ops=",".join(op.rsplit(".", 1)[-1] for op in kernel.ops),
                schedule=library.schedules.get(kernel.name, "?"),
                calls=calls[kernel.name],
                seconds=medians[kernel.name],
                flops=kernel_flops(kernel),
            )
        )
    rows.sort(key=lambda r: -r.total)
    facts = {
        "kernels": len(rows),
        "calls": sum(calls.values()),
        "build_seconds": round(build_seconds, 1),
        "threads": os.environ.get("TVM_NUM_THREADS", ""),
        "load": " / ".join(f"{v:.2f}" for v in os.getloadavg()),
    }
    return rows, facts


def in_program_profile(model_name: str, runs: int = 10, seed: int = 0, layout: str = "packed"):
    """The model's transpile.profiling.Profile: every kernel timed inside real runs of its cpp build."""
    import transpile
    from transpile.testing.models import load_model

    model = load_model(model_name, seed=seed)
    with layout_scope(layout):
        artifact = transpile.build(prepared_module(model, layout), backend="cpp", profile=True)
    return artifact.profile(*model.inputs(), runs=runs)


def model_latency(model_name: str, rounds: int = 20, seed: int = 0, layout: str = "packed") -> dict:
    """Median, p10 and p90 seconds of the whole model built by the cpp backend (one call per sample)."""
    import transpile
    from transpile.testing.models import load_model

    model = load_model(model_name, seed=seed)
    started = time.perf_counter()
    with layout_scope(layout):
        f = transpile.compile(prepared_module(model, layout), backend="cpp")
    build = time.perf_counter() - started
    args = model.inputs()
    f(*args)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        f(*args)
        samples.append(time.perf_counter() - start)
    samples.sort()
    pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]  # noqa: E731
    return {"median": statistics.median(samples), "p10": pick(0.1), "p90": pick(0.9), "build_seconds": build}


# ----- report --------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def _gf(value) -> str:
    return "" if value is None else f"{value:.1f}"


def summary(rows: list[KernelTiming]) -> dict:
    total = sum(r.total for r in rows)
    conv = [r for r in rows if "conv" in r.signature.split(" ")[0]]
    conv_time = sum(r.total for r in conv)
    conv_flops = sum(r.flops * r.calls for r in conv if r.flops)
    all_flops = sum(r.flops * r.calls for r in rows if r.flops)
    return {
        "total_ms": total * 1e3,
        "conv_share": conv_time / total if total else 0.0,
        "conv_gflops": conv_flops / conv_time / 1e9 if conv_time else None,
        "model_gflops": all_flops / total / 1e9 if total else None,
    }


def report(rows: list[KernelTiming], facts: dict, top: int) -> str:
    """A markdown table of the top kernels by total time."""
    total = sum(r.total for r in rows)
    lines = [
        f"model {facts['model']} ({facts.get('layout', '')} layout): {facts['kernels']} distinct kernels, "
        f"{facts['calls']} calls, kernels built in {facts['build_seconds']} s, "
        f"TVM_NUM_THREADS={facts['threads']}, load {facts['load']}",
        "",
        "| # | kernel | signature | schedule | calls | ms/call | total ms | share | GFLOP/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for index, r in enumerate(rows[:top], 1):
        lines.append(
            f"| {index} | {r.name} | {r.signature} | {r.schedule} | {r.calls} | {_ms(r.seconds)} | {_ms(r.total)} | "
            f"{100 * r.total / total:.1f} % | {_gf(r.gflops)} |"
        )
    s = summary(rows)
    lines += [
        "",
        f"sum of kernels {s['total_ms']:.3g} ms; conv {100 * s['conv_share']:.1f} % of it at "
        f"{_gf(s['conv_gflops'])} GFLOP/s; whole model {_gf(s['model_gflops'])} GFLOP/s",
    ]
    return "\n".join(lines)


def by_signature(rows) -> dict:
    """{signature: (calls, total seconds, total FLOPs or None)}: kernels doing the same operator
    (e.g. one conv fused with different epilogues) summed."""
    groups: dict = {}
    for r in rows:
        r = r if isinstance(r, dict) else asdict(r)
        calls, seconds, flops = groups.get(r["signature"], (0, 0.0, 0))
        groups[r["signature"]] = (
            calls + r["calls"],
            seconds + r["seconds"] * r["calls"],
            None if r["flops"] is None or flops is None else flops + r["flops"] * r["calls"],
        )
    return groups


def compare_report(rows: list[KernelTiming], before: dict, top: int) -> str:
    """Operators (by layout-free signature) of this run beside a previous run: time and GFLOP/s."""
    now, old = by_signature(rows), by_signature(before["rows"])
    order = sorted(set(now) | set(old), key=lambda sig: -max(now.get(sig, (0, 0.0))[1], old.get(sig, (0, 0.0))[1]))
    lines = [
        "| operator | calls | before ms | before GFLOP/s | after ms | after GFLOP/s | speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    for sig in order[:top]:
        b, a = old.get(sig), now.get(sig)
        cells = [sig, str((a or b)[0])]
        for group in (b, a):
            if group is None:
                cells += ["–", ""]
            else:
                cells += [_ms(group[1]), _gf(group[2] / group[1] / 1e9 if group[2] and group[1] else None)]
        cells.append(f"{b[1] / a[1]:.1f}×" if a and b and a[1] else "")
        lines.append("| " + " | ".join(cells) + " |")
    s, p = summary(rows), before["summary"]
    lines += [
        "",
        f"sum of kernels: before {p['total_ms']:.3g} ms (conv {_gf(p['conv_gflops'])} GFLOP/s), "
        f"after {s['total_ms']:.3g} ms (conv {_gf(s['conv_gflops'])} GFLOP/s)",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench kernels", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50_v2", help="friendly name (resnet50_v2, mobilenet_v2), corpus name or .relay path")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (median over them)")
    parser.add_argument("--top", type=int, default=20, help="kernels shown, by total time")
    parser.add_argument("--json", type=Path, help="write the timings here (for --compare later)")
    parser.add_argument("--compare", type=Path, help="a previous --json run: adds before columns, matched by signature")
    parser.add_argument("--model-latency", action="store_true", help="also time the whole model built by the cpp backend")
    parser.add_argument(
        "--in-program", action="store_true", help="also profile the kernels inside real runs of the cpp build (transpile profile)"
    )
    parser.add_argument(
        "--layout", choices=("packed", "nchw"), default="packed",
        help="packed: convolutions in NCHW[x]c (AlterOpLayout); nchw: as the model is written",
    )
    args = parser.parse_args(argv)
    rows, facts = profile_model(args.model, rounds=args.rounds, layout=args.layout)
    before = json.loads(args.compare.read_text()) if args.compare else None
    print(report(rows, facts, args.top))
    if before:
        print("\n" + compare_report(rows, before, args.top))
    result = {"facts": facts, "summary": summary(rows), "rows": [asdict(r) for r in rows]}
    if args.model_latency:
        latency = model_latency(args.model, layout=args.layout)
        result["latency"] = latency
        print(
            f"\nwhole model (cpp backend): median {latency['median'] * 1e3:.1f} ms, p10 {latency['p10'] * 1e3:.1f}, "
            f"p90 {latency['p90'] * 1e3:.1f}; build {latency['build_seconds']:.1f} s; load {' / '.join(f'{v:.2f}' for v in os.getloadavg())}"
        )
        if before and "latency" in before:
            print(f"before: median {before['latency']['median'] * 1e3:.1f} ms")
    if args.in_program:
        profile = in_program_profile(args.model, layout=args.layout)
        result["in_program"] = profile.to_json()
        print("\nin the program (profiling build of the cpp backend):\n" + profile.format(top=args.top))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0
