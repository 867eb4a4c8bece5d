"""Where a native program's time goes: per-kernel calls, time, share and GFLOP/s, measured inside real runs.

A profiling build (`transpile.build(mod, backend="cpp" or "tir", profile=True)`, its own cache
entry) calls every TVM kernel through a timed call site that adds the call's steady-clock duration
to the kernel's row of a table in the library; `artifact.profile(*args, runs=N)` runs the program
N times through its ordinary callable, reads the table and joins it with what the build recorded
about each kernel (operators, Relay source lines, FLOPs per call) into a `Profile`, printed like
TVM's debug executor. Time spent outside kernels (the Python boundary, allocation, control flow,
inline scalar arithmetic) is one more row, so the shares add up to 100 %. Normal builds have
neither the table nor the clock reads.

    art = transpile.build(mod, backend="cpp", profile=True)
    print(art.profile(x, runs=20).format(top=15))

The library exports two plain C functions (both backends):
    int64_t transpile_profile_read(int64_t* calls, int64_t* nanoseconds, int64_t capacity);
    void transpile_profile_reset(void);
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from .errors import TranspileError

__all__ = [
    "KernelInfo",
    "KernelRow",
    "Profile",
    "describe_kernels",
    "kernel_signature",
    "kernel_source",
    "profile_artifact",
    "profile",
    "random_arguments",
    "source_positions_digest",
    "OUTSIDE",
    "READ_SYMBOL",
    "RESET_SYMBOL",
]

READ_SYMBOL = "transpile_profile_read"
RESET_SYMBOL = "transpile_profile_reset"
OUTSIDE = "(outside kernels)"


# ----- what the build records about each timed kernel -------------------------------------------


@dataclass(frozen=True)
class KernelInfo:
    """A timed kernel as the build saw it: name, operators, Relay source lines, FLOPs per call."""

    name: str
    ops: tuple
    pattern: str = ""
    signature: str = ""  # layout-free description: `conv 3x3/1 64->64 56x56`
    source: str | None = None  # `resnet.relay:120-126`
    flops: int | None = None  # per call; None where not counted (see kernels/flops.py)

    def to_json(self) -> dict:
        return {**self.__dict__, "ops": list(self.ops)}

    @classmethod
    def from_json(cls, data: dict) -> "KernelInfo":
        return cls(**{**data, "ops": tuple(data.get("ops", ()))})


def kernel_source(kernel) -> str | None:
    """`file.relay:12-15`: the Relay lines the kernel's operators came from (None without spans)."""
    from .kernels.flops import operator_calls

    spans = [c.span for c in operator_calls(kernel.body) if getattr(c, "span", None) is not None]
    if not spans:
        return None
    name = str(spans[0].source_name).replace("\\", "/").rsplit("/", 1)[-1]
    lines = sorted({s.line for s in spans if s.source_name == spans[0].source_name})
    return f"{name}:{lines[0]}" if lines[0] == lines[-1] else f"{name}:{lines[0]}-{lines[-1]}"


def kernel_signature(kernel) -> str:
    """`conv 1x1/1 64->256 56x56` for a kernel with a counted operator, else its ops and first shape.

    Layout-free, so NCHW and NCHW16c builds of a model (or a conv fused with different epilogues)
    describe the same convolution alike."""
    from .kernels.flops import COUNTED_OPS, call_flops, conv_geometry, operator_calls

    counted = [c for c in operator_calls(kernel.body) if getattr(c.op, "name", "") in COUNTED_OPS]
    if counted:
        types = lambda c: [a.checked_type for a in c.args]  # noqa: E731
        call = max(counted, key=lambda c: call_flops(c.op.name, c.attrs, types(c), c.checked_type) or 0)
        conv = conv_geometry(call.op.name, call.attrs, types(call), call.checked_type)
        if conv is not None:
            kind = "dwconv" if conv["groups"] > 1 and conv["groups"] == conv["in_channels"] else "conv"
            kh, kw = conv["kernel"]
            h, w = conv["in_size"]
            return f"{kind} {kh}x{kw}/{conv['stride']} {conv['in_channels']}->{conv['out_channels']} {h}x{w}"
        shapes = " * ".join("x".join(str(d) for d in t.shape) for t in types(call)[:2])
        return f"{call.op.name.rsplit('.', 1)[-1]} {shapes}"
    first = kernel.params[0].type.shape if kernel.params else ()
    return f"{'+'.join(op.rsplit('.', 1)[-1] for op in kernel.ops)} {'x'.join(str(d) for d in first)}"


def source_positions_digest(mod) -> str:
    """sha256 of where every call of `mod` sits in its source: a profiling build reports source lines,
    so two texts of one program (moved lines, another file) must not share one."""
    import hashlib

    from .relay.deep import run_deep
    from .relay.visitor import ExprVisitor

    digest = hashlib.sha256()

    class Positions(ExprVisitor):
        def visit_call(self, call):
            span = getattr(call, "span", None)
            if span is not None:
                digest.update(f"{span.source_name}:{span.line}:{span.column}\0".encode())
            super().visit_call(call)

    def walk():
        for gv in sorted(mod.functions, key=lambda g: g.name_hint):
            digest.update(f"@{gv.name_hint}\0".encode())
            Positions().visit(mod.functions[gv])

    run_deep(walk)
    return digest.hexdigest()


def describe_kernels(kernels) -> list[dict]:
    """The JSON rows a profiling build stores in info.json, in the order of its timing table."""
    from .kernels.flops import kernel_flops

    rows = []
    for kernel in kernels:
        try:
            flops = kernel_flops(kernel)
        except Exception:  # noqa: BLE001 - a count we cannot take is just not shown
            flops = None
        info = KernelInfo(
            name=kernel.name,
            ops=tuple(kernel.ops),
            pattern=kernel.pattern.name.lower(),
            signature=kernel_signature(kernel),
            source=kernel_source(kernel),
            flops=flops,
        )
        rows.append(info.to_json())
    return rows


# ----- the report ---------------------------------------------------------------------------------


@dataclass
class KernelRow:
    """One kernel's (or the outside-kernels) share of `runs` runs."""

    info: KernelInfo
    calls: int  # over all runs
    seconds: float  # over all runs
    runs: int

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def calls_per_run(self) -> float:
        return self.calls / self.runs

    @property
    def seconds_per_run(self) -> float:
        return self.seconds / self.runs

    @property
    def seconds_per_call(self) -> float | None:
        return self.seconds / self.calls if self.calls else None

    @property
    def gflops(self) -> float | None:
        if not self.info.flops or not self.calls or self.seconds <= 0:
            return None
        return self.info.flops * self.calls / self.seconds / 1e9


@dataclass
class Profile:
    """Per-kernel rows (largest total first) and the outside-kernels time of `runs` runs."""

    backend: str
    runs: int
    run_seconds: list  # wall time of each run, through the program's Python callable
    kernels: list  # KernelRow, sorted by time
    threads: str = ""
    load: str = ""
    untimed: list = field(default_factory=list)  # kernels compiled into their callers (tir): in the outside row

    @property
    def total_seconds(self) -> float:
        return float(sum(self.run_seconds))

    @property
    def kernel_seconds(self) -> float:
        return sum(r.seconds for r in self.kernels)

    @property
    def outside(self) -> KernelRow:
        """Program time not spent in TVM kernels: boundary conversion, allocation, glue, scalar code."""
        seconds = max(self.total_seconds - self.kernel_seconds, 0.0)
        return KernelRow(KernelInfo(OUTSIDE, ()), self.runs, seconds, self.runs)

    def share(self, row: KernelRow) -> float:
        """The row's fraction of the whole program time (kernels and outside add up to 1)."""
        whole = max(self.total_seconds, self.kernel_seconds)
        return row.seconds / whole if whole > 0 else 0.0

    @property
    def gflops(self) -> float | None:
        """Counted FLOPs of a run over the run's mean wall time."""
        flops = sum(r.info.flops * r.calls for r in self.kernels if r.info.flops)
        return flops / self.total_seconds / 1e9 if flops and self.total_seconds > 0 else None

    def rows(self) -> list:
        """Kernel rows then the outside-kernels row."""
        return [*self.kernels, self.outside]

    def to_json(self) -> dict:
        return {
            "backend": self.backend,
            "runs": self.runs,
            "run_seconds": self.run_seconds,
            "threads": self.threads,
            "load": self.load,
            "untimed": self.untimed,
            "kernels": [
                {**r.info.to_json(), "calls": r.calls, "seconds": r.seconds, "gflops": r.gflops, "share": self.share(r)}
                for r in self.rows()
            ],
        }

    def format(self, top: int | None = None) -> str:
        """A table like TVM's debug executor: per kernel (per run) calls, time, share, GFLOP/s, operators, source."""
        per_run = self.total_seconds / self.runs if self.runs else 0.0
        unit, scale = ("ms", 1e3) if per_run >= 1e-3 else ("us", 1e6)  # per-run times in a readable unit
        shown = self.kernels if top is None else self.kernels[:top]
        table = [self._cells(str(i), r, scale) for i, r in enumerate(shown, 1)]
        hidden = self.kernels[len(shown) :]
        if hidden:
            rest = KernelRow(KernelInfo(f"({len(hidden)} more kernels)", ()), 0, 0.0, self.runs)
            rest.calls, rest.seconds = sum(r.calls for r in hidden), sum(r.seconds for r in hidden)
            table.append(self._cells("", rest, scale, per_call=False))
        table.append(self._cells("", self.outside, scale, calls=False, per_call=False))
        columns = ["#", "kernel", "calls", f"{unit}/run", "us/call", "share", "GFLOP/s", "operators", "source"]
        widths = [max(len(columns[i]), *(len(row[i]) for row in table)) for i in range(len(columns))]
        right = {0, 2, 3, 4, 5, 6}

        def line(cells):
            return "  ".join(
                c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
            ).rstrip()

        lines = [self._header(per_run), "", line(columns), line(["-" * w for w in widths]), *map(line, table)]
        if self.untimed:
            names = ", ".join(self.untimed[:6]) + (", ..." if len(self.untimed) > 6 else "")
            lines.append(
                f"{len(self.untimed)} kernels compiled into their callers are not timed (their time is outside kernels): {names}"
            )
        return "\n".join(lines)

    def _header(self, per_run: float) -> str:
        median = float(np.median(self.run_seconds)) if self.run_seconds else 0.0
        header = (
            f"{self.backend}: {self.runs} runs, mean {_ms(per_run)} ms per run (median {_ms(median)}), "
            f"kernels {100 * self.kernel_seconds / max(self.total_seconds, 1e-30):.1f} %"
        )
        if self.gflops:
            header += f", {self.gflops:.1f} GFLOP/s overall"
        return header + "".join(
            f"; {fact}" for fact in (self.threads, f"load {self.load}" if self.load else "") if fact
        )

    def _cells(self, index: str, r: KernelRow, scale: float, calls: bool = True, per_call: bool = True) -> list:
        operators = ",".join(op.rsplit(".", 1)[-1] for op in r.info.ops)
        if r.info.signature and r.info.flops:  # what the counted operator computes
            operators += f" ({r.info.signature})"
        return [
            index,
            r.name,
            _count(r.calls_per_run) if calls else "",
            f"{r.seconds_per_run * scale:.3f}",
            f"{r.seconds_per_call * 1e6:.1f}" if per_call and r.seconds_per_call else "",
            f"{100 * self.share(r):.1f} %",
            f"{r.gflops:.1f}" if r.gflops else "",
            operators,
            r.info.source or "",
        ]

    def __str__(self) -> str:
        return self.format()


def _threads_text() -> str:
    """`2 threads (TVM_THREAD_POOL_SPIN_COUNT=0, TVM_BIND_THREADS=0)`: the pool settings in force."""
    from .kernels.threads import thread_settings

    settings = thread_settings()
    count = settings.pop("TVM_NUM_THREADS", None) or settings.pop("OMP_NUM_THREADS", None)
    details = ", ".join(f"{k}={v}" for k, v in settings.items())
    return f"{count or '?'} threads" + (f" ({details})" if details else "")


def _ms(seconds: float) -> str:
    """Milliseconds, three decimals (three significant digits below 0.1 ms)."""
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms >= 0.1 or ms == 0 else f"{ms:.3g}"


def _count(value: float) -> str:
    return str(int(round(value))) if abs(value - round(value)) < 1e-9 else f"{value:.2f}"


# ----- running a profiling build ------------------------------------------------------------------


class _Counters:
    """The library's timing table, through its two exported C functions (ctypes: plain C ABI, both backends)."""

    def __init__(self, library_path, count: int):
        import ctypes

        # The same handle as the loaded module's (dlopen of an already loaded file), so the same table.
        self._lib = ctypes.CDLL(str(library_path))
        try:
            self._read = getattr(self._lib, READ_SYMBOL)
            self._reset = getattr(self._lib, RESET_SYMBOL)
        except AttributeError:
            raise TranspileError(f"{library_path} is not a profiling build (no {READ_SYMBOL})") from None
        self._read.restype = ctypes.c_int64
        self._read.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64), ctypes.c_int64]
        self._reset.restype = None
        self.count = count
        self._ctypes = ctypes

    def reset(self) -> None:
        self._reset()

    def read(self) -> tuple[list[int], list[int]]:
        n = max(self.count, 1)
        calls, nanoseconds = (self._ctypes.c_int64 * n)(), (self._ctypes.c_int64 * n)()
        found = self._read(calls, nanoseconds, n)
        if found != self.count:
            raise TranspileError(f"the library times {found} kernels but its build recorded {self.count}")
        return list(calls)[: self.count], list(nanoseconds)[: self.count]


def profile_artifact(artifact, args, runs: int = 10, warmup: int = 1) -> Profile:
    """Runs a profiling build's program `runs` times (after `warmup` untimed runs) and reports per kernel."""
    kernels = artifact.info.get("profile_kernels")
    if kernels is None:
        raise TranspileError(
            f"this {artifact.backend} artifact was not built for profiling: build it with "
            f"transpile.build(mod, backend={artifact.backend!r}, profile=True), or run `transpile profile`"
        )
    if runs < 1:
        raise TranspileError(f"runs must be at least 1, got {runs}")
    infos = [KernelInfo.from_json(k) for k in kernels]
    run = artifact.load()
    counters = _Counters(artifact.library_path, len(infos))
    for _ in range(max(warmup, 0)):  # page faults, thread-pool start, workspace growth
        run(*args)
    counters.reset()
    run_seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        run(*args)
        run_seconds.append(time.perf_counter() - start)
    calls, nanoseconds = counters.read()
    rows = [KernelRow(info, c, ns * 1e-9, runs) for info, c, ns in zip(infos, calls, nanoseconds) if c]
    rows.sort(key=lambda r: -r.seconds)
    return Profile(
        backend=artifact.backend,
        runs=runs,
        run_seconds=run_seconds,
        kernels=rows,
        threads=_threads_text(),
        load=" / ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "",
        untimed=list(artifact.info.get("profile_untimed", [])),
    )


def random_arguments(function, seed: int = 1) -> list:
    """Arguments for a typed Relay function from its parameter types: N(0, 1) floats, small
    non-negative integers, random booleans; tuples of those. Other types need real arguments."""
    from .relay.ty import TensorType, TupleType

    rng = np.random.default_rng(seed)

    def value(ty, name):
        if isinstance(ty, TupleType):
            return tuple(value(f, name) for f in ty.fields)
        if not isinstance(ty, TensorType):
            raise TranspileError(f"cannot make up a value for %{name} of type {ty}: pass the arguments")
        try:
            shape = tuple(int(d) for d in ty.shape)
        except (TypeError, ValueError):
            raise TranspileError(f"%{name} has a `?` dimension: pass the arguments") from None
        dtype = np.dtype(ty.dtype)
        if dtype == np.bool_:
            return rng.random(shape) < 0.5
        if np.issubdtype(dtype, np.floating):
            return rng.standard_normal(shape).astype(dtype)
        return rng.integers(0, 10, shape).astype(dtype)

    return [value(p.checked_type, p.name_hint) for p in function.params]


def profile(
    target, *args, backend: str = "cpp", runs: int = 10, entry: str = "main", params=None, **options
) -> Profile:
    """Builds `entry` of the program for profiling with `backend` (cpp or tir) and profiles `runs` runs
    on `args` (random arguments of the right shapes when none are given)."""
    from .backends.api import build, prepare

    _, typed, entry = prepare(target, backend=backend, entry=entry, params=params)
    if not args:
        args = tuple(random_arguments(typed[entry]))
    artifact = build(typed, backend=backend, entry=entry, profile=True, **options)
    return artifact.profile(*args, runs=runs)
