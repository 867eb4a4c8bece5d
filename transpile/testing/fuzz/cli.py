"""Command line of the fuzzers: `python -m transpile.testing.fuzz differential|mutation|replay|show`.

python -m transpile.testing.fuzz differential --programs 10000 --backends python,cpp,tir --seed 0 --jobs 2
python -m transpile.testing.fuzz mutation --mutants 10000 --seed 0
python -m transpile.testing.fuzz replay fuzz-out/cpp-mismatch-seed17.relay --backends cpp
python -m transpile.testing.fuzz shrink fuzz-out/cpp-mismatch-seed17.relay --backend cpp
python -m transpile.testing.fuzz show 17          # the program of seed 17
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

__all__ = ["main"]

MAX_REPRODUCTIONS_PER_CLASS = 3
NATIVE_BACKENDS = ("cpp", "tir")  # run native code: a crash kills the process (see --out/in-progress-<backend>-<pid>.*)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def differential(opts) -> int:
    if opts.jobs > 1:
        return _differential_jobs(opts)
    from .differential import REFERENCE, BackendRunner, differential_batch, run_reference
    from .generator import GeneratorConfig, generate_program
    from .report import Tally, write_reproduction

    import faulthandler

    faulthandler.enable()  # a native crash prints where; in-progress-<backend>-<pid>.relay in --out is the program
    backends = [b for b in opts.backends.split(",") if b and b != REFERENCE]
    reference = BackendRunner(REFERENCE)
    out_dir = Path(opts.out)
    runners = [
        BackendRunner(
            b,
            crash_dir=out_dir if b in NATIVE_BACKENDS else None,
            isolate=opts.isolate == "always" or (opts.isolate == "native" and b in NATIVE_BACKENDS),
            time_limit=opts.time_limit,
        )
        for b in backends
    ]
    tally = Tally([REFERENCE] + backends)
    config = GeneratorConfig(first_order_share=opts.first_order_share)
    written: dict[str, int] = {}
    start = time.perf_counter()
    last_report = 0.0
    done = 0
    seeds = range(opts.seed, opts.seed + opts.programs)
    for chunk_start in range(0, len(seeds), opts.batch_size):
        t0 = time.perf_counter()
        programs = [generate_program(s, config) for s in seeds[chunk_start : chunk_start + opts.batch_size]]
        tally.seconds["generate"] += time.perf_counter() - t0
        references = run_reference(reference, programs)
        for program, outcome in zip(programs, references):
            status = "reference_error" if outcome.is_internal else ("agree_error" if outcome.is_error else "match")
            from .differential import CaseResult

            tally.add(CaseResult(program, REFERENCE, status, outcome.describe() if outcome.is_error else ""))
        for runner in runners:
            for result in differential_batch(programs, references, runner, opts.batch_size):
                tally.add(result)
                if result.failed:
                    _record_failure(result, runner, out_dir, written, write_reproduction)
        tally.seconds[REFERENCE] = reference.seconds
        for runner in runners:
            tally.seconds[runner.name] = runner.seconds
        done += len(programs)
        now = time.perf_counter()
        if now - last_report > 5 or done == len(seeds):
            last_report = now
            rates = " ".join(
                f"{name} {sum(tally.counts[name].values()) - tally.counts[name]['skipped']} ran"
                for name in tally.backends
            )
            _log(f"[fuzz] {done}/{len(seeds)} programs, {now - start:.0f} s | {rates} | failures {tally.failures}")
    wall = time.perf_counter() - start
    if opts.tally_file:
        Path(opts.tally_file).write_text(tally.to_json())
    print(tally.table(done, wall))
    if tally.failures:
        print(f"reproductions in {out_dir}/")
    return 1 if tally.failures else 0


def _differential_jobs(opts) -> int:
    """Split the seeds into `--jobs` contiguous ranges, one worker process each, and merge their tallies.

    Kernel builds (TVM, g++) are single-threaded, so on an n-core machine n jobs run ~n times as many
    programs per second; a worker's progress lines are prefixed with its seed range."""
    import subprocess
    import tempfile
    import threading

    from .differential import REFERENCE
    from .report import Tally

    backends = [b for b in opts.backends.split(",") if b and b != REFERENCE]
    jobs = min(opts.jobs, opts.programs)
    bounds = [opts.seed + opts.programs * i // jobs for i in range(jobs + 1)]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-jobs-") as tmp:
        workers = []
        for i in range(jobs):
            first, count = bounds[i], bounds[i + 1] - bounds[i]
            tally_file = Path(tmp) / f"tally{i}.json"
            command = [
                sys.executable, "-m", "transpile.testing.fuzz", "differential",
                "--programs", str(count), "--seed", str(first), "--backends", opts.backends,
                "--batch-size", str(opts.batch_size), "--first-order-share", str(opts.first_order_share),
                "--out", opts.out, "--time-limit", str(opts.time_limit), "--isolate", opts.isolate,
                "--tally-file", str(tally_file),
            ]  # fmt: skip
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            relay = threading.Thread(target=_relay_lines, args=(process.stderr, f"[job {first}-{first + count - 1}] "))
            relay.start()
            workers.append((process, relay, tally_file))
        tally = Tally([REFERENCE] + backends)
        crashed = []
        for process, relay, tally_file in workers:
            process.wait()
            relay.join()
            if tally_file.exists():
                tally.merge(tally_file.read_text())
            else:
                crashed.append(process.returncode)
    print(tally.table(opts.programs, time.perf_counter() - start))
    if crashed:
        print(f"{len(crashed)} worker(s) ended without a tally (exit codes {crashed}): see their output above")
    if tally.failures:
        print(f"reproductions in {opts.out}/")
    return 1 if tally.failures or crashed else 0


def _relay_lines(stream, prefix: str) -> None:
    for line in stream:
        sys.stderr.write(prefix + line)
        sys.stderr.flush()


def _record_failure(result, runner, out_dir: Path, written: dict, write_reproduction) -> None:
    from .outcome import classify, error_key

    key = f"{result.backend} {error_key(result.status, result.detail)}"
    if written.get(key, 0) >= MAX_REPRODUCTIONS_PER_CLASS:
        return
    written[key] = written.get(key, 0) + 1
    confirmed = True
    if result.batch is None and result.status == "mismatch":
        # Found in a batch: check that the program alone fails too, else keep the batch as the reproduction.
        from .differential import BackendRunner

        alone = runner.run_one(result.program)
        reference = BackendRunner("interpreter").run_one(result.program)
        confirmed = classify(reference, alone, result.program.text)[0] == "mismatch"
    path = write_reproduction(out_dir, result, standalone_confirmed=confirmed)
    _log(
        f"[fuzz] {result.backend} {result.status} (seed {result.program.seed}): {result.detail.splitlines()[0] if result.detail else ''} -> {path}"
    )


def replay(opts) -> int:
    from .differential import BackendRunner
    from .outcome import classify
    from .report import load_inputs

    path = Path(opts.file)
    text = path.read_text()
    inputs = load_inputs(path.with_suffix(".npz")) if path.with_suffix(".npz").exists() else []
    if opts.signature:
        print("SIGNATURE", *_failure_signature(text, inputs, opts.backends))
        return 0
    reference = BackendRunner("interpreter").run(text, inputs, None)
    print(f"interpreter: {reference.describe()}")
    if not reference.is_error:
        print(f"  {reference.value!r}"[:2000])
    failed = reference.is_internal
    for backend in opts.backends.split(","):
        outcome = BackendRunner(backend).run(text, inputs, None)
        status, detail = classify(reference, outcome, text)
        print(f"{backend}: {status} {detail}"[:4000])
        if status == "mismatch":
            print(f"  {outcome.value!r}"[:2000])
        failed = failed or status in ("mismatch", "missing_error", "spurious_error", "internal_error")
    return 1 if failed else 0


def _failure_signature(text: str, inputs: list, backend: str) -> tuple:
    """(status, exception type of the backend) of a program: what shrinking must preserve."""
    from .differential import BackendRunner
    from .outcome import classify

    reference = BackendRunner("interpreter").run(text, inputs, None)
    outcome = BackendRunner(backend).run(text, inputs, None)
    status = classify(reference, outcome, text)[0]
    return status, outcome.error.type_name if outcome.error is not None else None


def _isolated_signature(text: str, inputs: list, backend: str) -> tuple:
    """_failure_signature computed in a child process: a crash (signal) is a signature too."""
    import subprocess
    import tempfile

    from .report import save_inputs

    with tempfile.TemporaryDirectory(prefix="fuzz-shrink-") as tmp:
        path = Path(tmp) / "candidate.relay"
        path.write_text(text)
        save_inputs(path.with_suffix(".npz"), inputs)
        command = [
            sys.executable,
            "-m",
            "transpile.testing.fuzz",
            "replay",
            str(path),
            "--backends",
            backend,
            "--signature",
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return ("timeout", None)
    if done.returncode < 0:
        return ("crash", f"signal {-done.returncode}")
    for line in done.stdout.splitlines():
        if line.startswith("SIGNATURE "):
            status, error_type = line.split()[1:3]
            return (status, None if error_type == "None" else error_type)
    return ("no-signature", done.returncode)


def shrink_command(opts) -> int:
    from .outcome import FAILURES
    from .report import load_inputs, save_inputs
    from .shrink import shrink

    path = Path(opts.file)
    text = path.read_text()
    inputs = load_inputs(path.with_suffix(".npz")) if path.with_suffix(".npz").exists() else []
    signature = _isolated_signature if opts.isolate or opts.backend in NATIVE_BACKENDS else _failure_signature
    target = signature(text, inputs, opts.backend)
    if target[0] not in FAILURES:
        print(f"{path} does not fail on {opts.backend} ({target[0]}): nothing to shrink")
        return 1
    _log(f"[shrink] keeping {target} on {opts.backend}, {len(text)} characters")
    small_text, small_inputs = shrink(
        text, inputs, lambda t, i: signature(t, i, opts.backend) == target, opts.seconds, log=_log
    )
    out = path.with_name(path.stem + ".min.relay")
    out.write_text(small_text)
    save_inputs(out.with_suffix(".npz"), small_inputs)
    print(small_text)
    for value in small_inputs:
        print(f"// {value!r}"[:400])
    print(f"written to {out} (+ .npz)")
    return 0


def show(opts) -> int:
    from .generator import GeneratorConfig, generate_program

    program = generate_program(opts.seed, GeneratorConfig(first_order_share=opts.first_order_share))
    print(program.text)
    for t, value in zip(program.param_types, program.inputs):
        print(f"// {t.text()} = {value!r}"[:400])
    return 0


def mutation(opts) -> int:
    from .mutation import run_mutation_fuzz

    report = run_mutation_fuzz(opts.mutants, seed=opts.seed, progress=_log)
    print(report.summary())
    return 0 if report.ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transpile.testing.fuzz", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    diff = commands.add_parser("differential", help="random programs on backends against the interpreter")
    diff.add_argument("--programs", type=int, default=1000)
    diff.add_argument("--backends", default="python,cpp,tir")
    diff.add_argument("--seed", type=int, default=0)
    diff.add_argument("--batch-size", type=int, default=40, help="programs per build (default 40)")
    diff.add_argument("--first-order-share", type=float, default=0.45, help="share of programs tir can run")
    diff.add_argument("--out", default="fuzz-out", help="where failing programs are written")
    diff.add_argument("--time-limit", type=float, default=600.0, help="seconds per isolated build and call (hang)")
    diff.add_argument(
        "--isolate", choices=["native", "always", "never"], default="native",
        help="run backends in a worker process, so a crash is a reported failure (default: cpp and tir)",
    )  # fmt: skip
    diff.add_argument("--jobs", type=int, default=1, help="worker processes, each a contiguous range of seeds")
    diff.add_argument("--tally-file", default=None, help=argparse.SUPPRESS)  # a --jobs worker's result
    mut = commands.add_parser("mutation", help="mutated corpus programs through the parser and type checker")
    mut.add_argument("--mutants", type=int, default=1000)
    mut.add_argument("--seed", type=int, default=0)
    rep = commands.add_parser("replay", help="run a written reproduction (.relay + .npz) again")
    rep.add_argument("file")
    rep.add_argument("--backends", default="python,cpp,tir")
    rep.add_argument("--signature", action="store_true", help="print only `SIGNATURE status error-type` (one backend)")
    shr = commands.add_parser("shrink", help="shrink a failing reproduction (.relay + .npz) to FILE.min.relay")
    shr.add_argument("file")
    shr.add_argument("--backend", required=True)
    shr.add_argument("--seconds", type=float, default=300.0, help="time budget (default 300)")
    shr.add_argument("--isolate", action="store_true", help="check each candidate in a child process (native: always)")
    sh = commands.add_parser("show", help="print the program of a seed and its arguments")
    sh.add_argument("seed", type=int)
    sh.add_argument("--first-order-share", type=float, default=0.45)
    opts = parser.parse_args(argv)
    commands_by_name = {
        "differential": differential,
        "mutation": mutation,
        "replay": replay,
        "shrink": shrink_command,
        "show": show,
    }
    return commands_by_name[opts.command](opts)
