"""Build and run one corpus model on one backend in this process, timing each stage (used in a subprocess).

    python -m transpile.testing.run_model mobilenet_v2 --backend cpp --out result.npz

Prints one JSON line: the seconds of each stage (import, model = parse + weights, build, load,
run), the artifact's directory and the process's total. Tests run it in a child process so that
a backend which crashes the interpreter fails one test instead of the whole session; `python -m
bench builds` runs it to time builds and cache hits in a fresh process, imports included.
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()

import argparse  # noqa: E402 - the clock starts before any import
import json  # noqa: E402
import sys  # noqa: E402

__all__ = ["main"]


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m transpile.testing.run_model", description=__doc__.split("\n")[0])
    parser.add_argument(
        "model", help="friendly name (mnist, mobilenet_v2, resnet50_v2, resnext50, gpt2), corpus name or .relay path"
    )
    parser.add_argument("--backend", default="cpp")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    parser.add_argument(
        "--weights", help="an .npz of the weights (arr_0, arr_1, ... by meta index) instead of random ones"
    )
    parser.add_argument("--input-seed", type=int, default=1, help="seed of the random input (default 1)")
    parser.add_argument("--no-run", action="store_true", help="build and load only")
    parser.add_argument("--out", help="write the outputs to this .npz (out_0, out_1, ...)")
    return parser.parse_args(argv)


def _flatten(value) -> list:
    return [a for v in value for a in _flatten(v)] if isinstance(value, tuple) else [value]


def main(argv=None) -> int:
    opts = _parse_args(sys.argv[1:] if argv is None else argv)
    stages = {}
    clock = time.perf_counter()

    def stage(name):
        nonlocal clock
        now = time.perf_counter()
        stages[name] = round(now - clock, 4)
        clock = now

    import numpy as np

    import transpile

    from .models import load_model

    stage("import")
    weights = None
    if opts.weights:
        with np.load(opts.weights) as archive:
            weights = [archive[f"arr_{i}"] for i in range(len(archive.files))]
    model = load_model(opts.model, seed=opts.seed, weights=weights)
    stage("model")
    artifact = transpile.build(model.module, backend=opts.backend)
    stage("build")
    function = artifact.load()
    stage("load")
    report = {
        "model": model.name,
        "backend": opts.backend,
        "directory": str(getattr(artifact, "directory", "")),
        "weight_bytes": model.weight_bytes,
    }
    if not opts.no_run:
        outputs = _flatten(function(*model.inputs(opts.input_seed)))
        stage("run")
        if opts.out:
            np.savez(opts.out, **{f"out_{i}": np.asarray(o) for i, o in enumerate(outputs)})
    report["stages"] = stages
    report["total"] = round(time.perf_counter() - _STARTED, 4)
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
