"""Tuning kernels with TVM's meta_schedule; the hand schedules stay whenever they are as fast.

    build_kernels(kernels, out_dir, tune=32)        # what `transpile.build(..., tune=True)` reaches

Only kernels worth it are tuned: those with a multiply-accumulate operator (dense, matmul,
batch_matmul, convolutions; see flops.py), static shapes and floating-point parameters. For each:

1. its unscheduled PrimFunc (without its name) is the workload; its structural hash and the target
   name a folder `cache_root()/tuning/<target>/<workload>/` holding meta_schedule's JSON database
   and `tuned.json` (trials run, seconds). A later build reuses the database and tunes again only
   when asked for more trials than were run;
2. the best tuned schedule and the hand schedule are compiled, checked against each other and
   timed alone, interleaved; the faster one is used (`choice-<compiler digest>.json` records the
   verdict, so a cache hit measures nothing; a change of the schedules' code measures again).

Tuning time is reported through `transpile.progress` (stage "kernels: tune", then a note).
Needs psutil and cloudpickle (`pip install transpile[tune]`) and apache-tvm-ffi 0.1.14: with
0.1.15.post2, serializing any TVM IR object (`tvm.ir.save_json`, which meta_schedule's mutators,
database and builder all do) segfaults, so tuning checks that first, in a child process.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import TranspileError

__all__ = ["DEFAULT_TRIALS", "Choice", "trials_of", "is_tunable", "tune_kernels", "tuning_root"]

log = logging.getLogger(__name__)

# Trials per kernel for `tune=True`: about 20-40 s per kernel on 2 cores.
DEFAULT_TRIALS = 32
# Each timing sample of the hand / tuned comparison runs at least this long.
_SAMPLE_MS = 10
_ROUNDS = 5


@dataclass
class Choice:
    """What one tunable kernel runs: "tuned" or "hand", with both measured times (microseconds)."""

    schedule: str
    hand_us: float
    tuned_us: float | None
    trials: int
    tune_seconds: float = 0.0

    @property
    def speedup(self) -> float | None:
        return self.hand_us / self.tuned_us if self.tuned_us else None


def trials_of(value) -> int:
    """The trials per kernel that the `tune` option asks for: True -> DEFAULT_TRIALS, False/None -> 0."""
    if value is None or value is False:
        return 0
    if value is True:
        return DEFAULT_TRIALS
    if isinstance(value, int) and value > 0:
        return value
    raise TranspileError(f"option tune must be True, False or a positive number of trials per kernel, got {value!r}")


def is_tunable(kernel) -> bool:
    """A kernel with a multiply-accumulate operator, static shapes and floating-point parameters."""
    from ..relay.ty import TensorType
    from .flops import kernel_flops
    from .lower import is_dynamic_kernel

    if is_dynamic_kernel(kernel) or kernel_flops(kernel) is None:
        return False
    return all(isinstance(p.type, TensorType) and p.type.dtype.startswith("float") for p in kernel.params)


def tuning_root() -> Path:
    from ..backends.native import cache_root

    return cache_root() / "tuning"


def tune_kernels(kernels, unscheduled: dict, hand: dict, target, trials: int) -> dict:
    """{kernel name: Choice} for the tunable `kernels`; replaces `hand[name]` (hand-scheduled PrimFuncs)
    by the tuned PrimFunc where that is faster. `unscheduled`: {name: PrimFunc} before scheduling."""
    from .. import progress

    tunable = [k for k in kernels if is_tunable(k)]
    if not tunable or trials <= 0:
        return {}
    check_tuning_works()
    choices = {}
    started = time.perf_counter()
    with progress.stage("kernels: tune", total=len(tunable)) as stage:
        for kernel in tunable:
            tuned_func, choice = _tune_kernel(kernel, unscheduled[kernel.name], hand[kernel.name], target, trials)
            choices[kernel.name] = choice
            if choice.schedule == "tuned":
                hand[kernel.name] = tuned_func
            stage.advance(1, detail=f"{kernel.name}: {choice.schedule}")
    progress.note(_summary(choices, time.perf_counter() - started))
    return choices


def _summary(choices: dict, seconds: float) -> str:
    tuned = [c for c in choices.values() if c.schedule == "tuned"]
    spent = sum(c.tune_seconds for c in choices.values())
    text = f"tuning: {len(choices)} kernels in {seconds:.1f} s ({spent:.1f} s searching)"
    if tuned:
        gains = ", ".join(f"{c.speedup:.2f}x" for c in tuned)
        text += f"; {len(tuned)} use the tuned schedule ({gains} over the hand schedule)"
    else:
        text += "; the hand schedules stay (as fast or faster)"
    return text


# ----- checks -------------------------------------------------------------------------------------


_PROBE = "import tvm; tvm.ir.save_json(tvm.ir.PrimType('int32'))"
_KNOWN_GOOD_FFI = "0.1.14"  # the release apache-tvm 0.27.0.post1 was built against: no probe needed


def _ffi_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apache-tvm-ffi")
    except PackageNotFoundError:
        return ""


@functools.lru_cache(maxsize=None)
def check_tuning_works() -> None:
    """Raises TranspileError when meta_schedule cannot run here (missing packages, or a tvm-ffi whose
    serialization of TVM objects crashes: probed in a child process, so this one survives)."""
    missing = [name for name in ("psutil", "cloudpickle") if not _importable(name)]
    if missing:
        raise TranspileError(f"tuning needs {' and '.join(missing)}: pip install 'transpile[tune]'")
    if _ffi_version().startswith(_KNOWN_GOOD_FFI):
        return
    probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True)
    if probe.returncode != 0:
        raise TranspileError(
            "tuning needs apache-tvm-ffi 0.1.14.post0 (the version apache-tvm 0.27.0.post1 was built "
            f"against): serializing a TVM object failed in this environment (exit code {probe.returncode}); "
            "pip install 'apache-tvm-ffi==0.1.14.post0'"
        )


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


# ----- one kernel ---------------------------------------------------------------------------------


def _tune_kernel(kernel, unscheduled, hand_func, target, trials: int):
    """(tuned PrimFunc or None, Choice) for one kernel, from the cache where possible."""
    from .digest import kernel_compiler_digest

    workload = _workload(unscheduled)
    directory = tuning_root() / _target_folder(target) / _workload_key(workload)
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(directory):
        spent = _ensure_tuned(directory, workload, target, trials, kernel.name)
        tuned = _best_schedule(directory, workload, target)
        tuned = None if tuned is None else tuned.with_attr("global_symbol", kernel.name)
        choice_path = directory / f"choice-{kernel_compiler_digest()[:16]}-{trials}.json"
        choice = _read_choice(choice_path)
        if choice is None:
            choice = _measure(kernel, hand_func, tuned, target, trials)
            choice_path.write_text(json.dumps(asdict(choice)))
        choice.tune_seconds = spent
    if choice.schedule == "tuned" and tuned is None:  # the database lost its records: stay safe
        choice.schedule = "hand"
    return tuned, choice


def _workload(func):
    """The function to tune: without its name (kernels of other programs share tuning), and without
    topi's `layout_free_buffers`, which lets meta_schedule assume weights re-laid out ahead of time
    (ours arrive as they are, or already packed by AlterDenseLayout)."""
    return func.without_attr("global_symbol").without_attr("layout_free_buffers")


def _workload_key(workload) -> str:
    import tvm_ffi

    return f"{tvm_ffi.structural_hash(workload) & (2**64 - 1):016x}"


def _target_folder(target) -> str:
    import tvm

    from .target import target_key

    text = f"{target_key(target)};tvm={tvm.__version__}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@contextlib.contextmanager
def _locked(directory: Path):
    """One process at a time tunes or measures a workload (others wait, then reuse its results)."""
    with open(directory / "lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _database(directory: Path):
    from tvm.s_tir import meta_schedule as ms

    return ms.database.JSONDatabase(
        str(directory / "database_workload.json"), str(directory / "database_tuning_record.json"), allow_missing=True
    )


def _tuned_trials(directory: Path) -> int:
    try:
        return int(json.loads((directory / "tuned.json").read_text())["trials"])
    except (OSError, ValueError, KeyError):
        return 0


def _ensure_tuned(directory: Path, workload, target, trials: int, name: str) -> float:
    """Runs meta_schedule until the database holds `trials` trials of `workload`; returns seconds spent."""
    done = _tuned_trials(directory)
    if done >= trials:
        return 0.0
    from tvm.s_tir import meta_schedule as ms

    from .threads import configure_threads

    cores = configure_threads()
    tuning_target = _with_cores(target, cores)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="transpile-tune-") as work, _quiet_meta_schedule():
        ms.tir_integration.tune_tir(
            workload,
            tuning_target,
            work,
            max_trials_global=trials - done,
            num_trials_per_iter=min(trials - done, 32),
            database=_database(directory),
            builder=ms.builder.LocalBuilder(f_build=build_candidate, max_workers=cores, timeout_sec=60),
            runner=ms.runner.LocalRunner(evaluator_config=ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=20)),
            cost_model="xgb" if _importable("xgboost") else "random",
            strategy=_search_strategy(trials - done),
            num_tuning_cores=cores,
            seed=0,
        )
    seconds = time.perf_counter() - started
    (directory / "tuned.json").write_text(json.dumps({"trials": trials, "seconds": seconds, "kernel": name}))
    log.info("tuned %s: %d trials in %.1f s", name, trials - done, seconds)
    return seconds


def _search_strategy(trials: int):
    """Evolutionary search with a population in proportion to the budget: its default 512 candidates
    per round cost more to evolve than a few trials cost to measure."""
    from tvm.s_tir import meta_schedule as ms

    population = max(32, min(512, 8 * trials))
    return ms.search_strategy.EvolutionarySearch(population_size=population, init_min_unmeasured=min(50, population))


def build_candidate(mod, target, _params):
    """meta_schedule's default_build without its `import tvm.s_tir.tensor_intrin` (17 s in every
    fresh builder process, and the builder starts fresh processes every round: builds timed out)."""
    from tvm.driver import build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod), target=target)


def _with_cores(target, cores: int):
    """The target with `num-cores` (meta_schedule requires it to tile parallel loops)."""
    import tvm

    return tvm.target.Target({**target.export(), "num-cores": cores})


@contextlib.contextmanager
def _quiet_meta_schedule():
    """meta_schedule logs every round at INFO on stderr; keep that to warnings."""
    logger = logging.getLogger("tvm.s_tir.meta_schedule")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _best_schedule(directory: Path, workload, target):
    """The best PrimFunc the database has for `workload`, or None."""
    from tvm.s_tir import meta_schedule as ms

    if _tuned_trials(directory) == 0:
        return None
    try:
        sch = ms.tir_integration.compile_tir(_database(directory), workload, _with_cores(target, _cores()))
    except Exception as exc:  # noqa: BLE001 - a broken database means: no tuned schedule
        log.warning("tuning database %s unusable: %s", directory, exc)
        return None
    return None if sch is None else sch.mod["main"]


def _cores() -> int:
    from .threads import configure_threads

    return configure_threads()


def _read_choice(path: Path) -> Choice | None:
    try:
        data = json.loads(path.read_text())
        return Choice(data["schedule"], data["hand_us"], data["tuned_us"], data["trials"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ----- hand against tuned -------------------------------------------------------------------------


def _measure(kernel, hand_func, tuned_func, target, trials: int) -> Choice:
    """Both schedules compiled, checked against each other and timed on the same random inputs."""
    import tvm

    from .iter_map_workaround import avoid_iter_map_padding

    candidates = {"hand": avoid_iter_map_padding(hand_func)}  # as build.scheduled_functions compiles them
    if tuned_func is not None:
        candidates["tuned"] = avoid_iter_map_padding(tuned_func)
    module = tvm.IRModule({name: f.with_attr("global_symbol", name) for name, f in candidates.items()})
    executable = tvm.compile(module, target=target)
    arrays = _random_arguments(kernel)
    runs, outputs = {}, {}
    for name in candidates:
        args = [tvm.runtime.tensor(a) for a in arrays]
        executable[name](*args)
        outputs[name] = [a.numpy() for a in args]
        runs[name] = (executable.mod.time_evaluator(name, tvm.cpu(), number=1, repeat=1, min_repeat_ms=_SAMPLE_MS), args)
    if "tuned" in candidates and not _agree(outputs["hand"], outputs["tuned"]):
        log.warning("the tuned schedule computes something else than the hand schedule: keeping the hand one")
        return Choice("hand", _best_time(runs, "hand"), None, trials)
    times = {name: [] for name in runs}
    for _ in range(_ROUNDS):  # interleaved: a load spike hits both
        for name, (evaluator, args) in runs.items():
            times[name].append(evaluator(*args).mean)
    hand_us = min(times["hand"]) * 1e6
    tuned_us = min(times["tuned"]) * 1e6 if "tuned" in times else None
    better = tuned_us is not None and tuned_us < hand_us
    return Choice("tuned" if better else "hand", hand_us, tuned_us, trials)


def _best_time(runs, name) -> float:
    evaluator, args = runs[name]
    return min(evaluator(*args).mean for _ in range(_ROUNDS)) * 1e6


def _random_arguments(kernel) -> list:
    """Random inputs and outputs (overwritten) for the kernel's PrimFunc (floats only: is_tunable)."""
    from .lower import result_types

    rng = np.random.default_rng(0)
    types = [p.type for p in kernel.params] + result_types(kernel)
    return [rng.standard_normal([int(d) for d in t.shape]).astype(t.dtype) for t in types]


def _agree(expected: list, got: list) -> bool:
    return all(np.allclose(e, g, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(e).max(initial=0.0)))) for e, g in zip(expected, got))
