"""Fuzzing statistics, the summary table, and failures written as standalone reproductions."""

from __future__ import annotations

import collections
import json
import re
import shlex
import sys
from pathlib import Path

import numpy as np

from .batch import batch_arguments, batch_text
from .outcome import STATUSES, error_key

__all__ = ["Tally", "write_reproduction", "save_inputs", "load_inputs"]


class Tally:
    """Counts of statuses per backend, failure classes, and time per backend."""

    def __init__(self, backends):
        self.backends = list(backends)
        self.counts = {b: collections.Counter() for b in self.backends}
        self.seconds = collections.Counter()
        self.classes: dict[str, list] = collections.defaultdict(list)  # error_key -> [seed]
        self.unsupported = collections.Counter()

    def add(self, result) -> None:
        self.counts[result.backend][result.status] += 1
        if result.failed:
            self.classes[f"{result.backend} {error_key(result.status, result.detail)}"].append(result.program.seed)
        elif result.status in ("unsupported", "skipped"):
            self.unsupported[f"{result.backend} {error_key(result.status, result.detail)}"] += 1

    @property
    def failures(self) -> int:
        return sum(len(v) for v in self.classes.values())

    def to_json(self) -> str:
        """Everything `merge` needs: worker processes of a `--jobs` run send their tally to the parent."""
        return json.dumps(
            {
                "counts": {b: dict(c) for b, c in self.counts.items()},
                "seconds": dict(self.seconds),
                "classes": dict(self.classes),
                "unsupported": dict(self.unsupported),
            }
        )

    def merge(self, text: str) -> None:
        data = json.loads(text)
        for backend, counts in data["counts"].items():
            self.counts.setdefault(backend, collections.Counter()).update(counts)
        self.seconds.update(data["seconds"])
        for key, seeds in data["classes"].items():
            self.classes[key] += seeds
        self.unsupported.update(data["unsupported"])

    def table(self, programs: int, wall: float) -> str:
        columns = [s for s in STATUSES]
        head = f"{'backend':<12}" + "".join(f"{c:>16}" for c in columns) + f"{'programs/s':>12}"
        lines = [head, "-" * len(head)]
        for backend in self.backends:
            row = self.counts[backend]
            ran = sum(row[s] for s in STATUSES if s != "skipped")
            rate = ran / self.seconds[backend] if self.seconds[backend] else 0.0
            lines.append(f"{backend:<12}" + "".join(f"{row[c]:>16}" for c in columns) + f"{rate:>12.1f}")
        lines.append(f"{programs} programs in {wall:.1f} s ({programs / wall if wall else 0:.1f} programs/s overall)")
        if self.unsupported:
            lines.append("not run (skipped: feature not declared; unsupported: UnsupportedFeatureError):")
            lines += [f"  {count:6d}  {key}" for key, count in self.unsupported.most_common(12)]
        if self.classes:
            lines.append("failure classes:")
            for key, results in sorted(self.classes.items(), key=lambda kv: -len(kv[1])):
                seeds = ", ".join(str(seed) for seed in sorted(results)[:6])
                lines.append(f"  {len(results):6d}  {key}  (seeds {seeds}{', ...' if len(results) > 6 else ''})")
        return "\n".join(lines)


def save_inputs(path: Path, inputs: list) -> None:
    np.savez(path, **{f"arg{i}": np.asarray(v) for i, v in enumerate(inputs)})


def load_inputs(path: Path) -> list:
    with np.load(path) as data:
        return [data[f"arg{i}"] for i in range(len(data.files))]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:60]


def write_reproduction(out_dir: Path, result, standalone_confirmed: bool = True) -> Path:
    """`<backend>-<status>-seed<N>.relay` + `.npz` (+ `.txt`: what differed and the replay command)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{result.backend}-{result.status}-seed{result.program.seed}"
    if result.batch is not None or not standalone_confirmed:
        programs = result.batch or [result.program]
        text, inputs = batch_text(programs), batch_arguments(programs)
        stem += "-batch"
    else:
        text, inputs = result.program.text, result.program.inputs
    relay_path = out_dir / f"{stem}.relay"
    relay_path.write_text(text)
    save_inputs(out_dir / f"{stem}.npz", inputs)
    command = f"{shlex.quote(sys.executable)} -m transpile.testing.fuzz replay {shlex.quote(str(relay_path))} --backends {result.backend}"
    (out_dir / f"{stem}.txt").write_text(f"{result.status}: {result.detail}\n\nreplay: {command}\n")
    return relay_path
