"""Median-of-batches timing: warm up, then repeat until a time budget or a run count is reached."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class TimingPolicy:
    min_time: float  # keep sampling until this many seconds were spent ...
    min_samples: int  # ... and at least this many samples were taken,
    max_samples: int  # but never more samples than this
    batch_target: float = 2e-3  # calls shorter than this are timed in batches this long (timer overhead)


FULL = TimingPolicy(min_time=0.5, min_samples=3, max_samples=200)
QUICK = TimingPolicy(min_time=0.05, min_samples=1, max_samples=10)


@dataclass(frozen=True)
class Timing:
    median: float  # seconds per call
    calls: int  # timed calls (warm-up excluded)


def measure(call, args: tuple, policy: TimingPolicy) -> Timing:
    """Median seconds per call of `call(*args)`; the caller has already run it once (the correctness check)."""
    start = time.perf_counter()
    call(*args)  # warm-up, also sizes the batches
    single = time.perf_counter() - start
    batch = max(1, int(policy.batch_target / single)) if single > 0 else 1000
    samples: list[float] = []
    spent = 0.0
    while len(samples) < policy.max_samples and (spent < policy.min_time or len(samples) < policy.min_samples):
        start = time.perf_counter()
        for _ in range(batch):
            call(*args)
        elapsed = time.perf_counter() - start
        samples.append(elapsed / batch)
        spent += elapsed
    return Timing(statistics.median(samples), len(samples) * batch)


def format_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} µs"
    return f"{seconds * 1e9:.3g} ns"
