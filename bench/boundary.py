"""`python -m bench boundary`: Python-boundary costs of compiled callables (List conversion, calls from threads)."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SIZES, QUICK_SIZES = (10**3, 10**4, 10**5, 10**6), (10**3, 10**4)
INTERPRETER_MAX = 10**4  # the interpreter is a reference only; larger lists take it minutes
LIST_BACKENDS, THREAD_BACKENDS, THREAD_COUNTS = ("python", "cpp", "interpreter"), ("cpp", "tir", "C API"), (1, 2, 4, 8)
LAYERS, WIDTH, BATCH = 5, 256, 16
TOLERANCE = 1e-4  # of the output's scale: float32 kernels against a float64 numpy reference
HEADER = '#[version = "0.0.5"]\n'
# Element kind -> (the items' Relay type, the List's items made from a numpy array of values). 0-d arrays are
# what the backends return for int32; Python ints (and numpy scalars) are accepted too, through a slower check.
ELEMENTS = {
    "int32 0-d arrays": ("int32", lambda values: [np.asarray(v) for v in values]),
    "int32 Python ints": ("int32", lambda values: values.tolist()),
    "float32[4] arrays": ("Tensor[(4), float32]", lambda values: [v.copy() for v in values]),
}
# The programs do O(1) work, so the times are the boundary's: "in" converts the List and returns whether it
# is empty, "in+out" returns it (converted back: every element is checked).
PROGRAMS = {
    "in": "def @main(%xs: List[ITEM]) -> int32 { match (%xs) { Cons(_, _) => 1, Nil => 0 } }",
    "in+out": "def @main(%xs: List[ITEM]) -> List[ITEM] { %xs }",
}


@dataclass
class ListRow:
    """One (backend, element kind, n): median seconds per call by direction; a wrong result or failure if any."""

    backend: str
    elements: str
    n: int
    seconds: dict
    problem: str = ""

    def per_element(self, direction: str) -> float | None:
        return self.seconds[direction] / self.n * 1e6 if direction in self.seconds else None

    @property
    def out(self) -> float | None:
        return self.per_element("in+out") - self.per_element("in") if len(self.seconds) == 2 else None


@dataclass
class ThreadRow:
    """One (backend, thread count): the median wall time of `threads` x `calls` calls over the rounds."""

    backend: str
    threads: int
    calls: int
    seconds: float = 0.0
    problem: str = ""

    @property
    def rate(self) -> float:
        return self.threads * self.calls / self.seconds if self.seconds else 0.0


def _reason(exc: Exception) -> str:
    detail = getattr(exc, "stderr", None) or str(exc)  # a failed compiler or driver: its own message
    return f"{type(exc).__name__}: {' '.join(str(detail).split())[-200:]}"


def _module(text: str, meta: list | None = None, prelude: bool = True):
    from transpile import relay

    init = relay.IRModule() if prelude else None
    if prelude:
        relay.Prelude(init)
    table = {"relay.Constant": [relay.const(w) for w in meta]} if meta else None
    return relay.parse(HEADER + text, init_module=init, init_meta_table=table)


def _list_problem(direction: str, values: np.ndarray, result) -> str:
    """Why `result` is not what the program must return for `values`, or ""."""
    from .workloads.models import list_items

    if direction == "in":
        return "" if int(result) == 1 else f"returned {int(result)}, expected 1"
    items = list_items(result)
    got = np.array(items, dtype=values.dtype).reshape(values.shape) if len(items) == len(values) else None
    right = got is not None and np.array_equal(got, values)
    return "" if right else f"the returned List differs ({len(items)} items)"


def measure_lists(backends, sizes, calls: int, log=print) -> tuple[list[ListRow], dict]:
    """Item 19: rows for every (element kind, n, backend); and seconds per element to build each argument."""
    import transpile

    from .workloads.models import python_list

    compiled, rows, building = {}, [], {}
    for elements, (item, make_items) in ELEMENTS.items():
        for n in sizes:
            values = np.arange(n) % 1000 if item == "int32" else (np.arange(n * 4) % 1000).reshape(n, 4)
            values = values.astype("int32" if item == "int32" else "float32")
            start = time.perf_counter()
            argument = python_list(make_items(values))
            building[(elements, n)] = (time.perf_counter() - start) / n
            for backend in backends:
                if backend == "interpreter" and n > INTERPRETER_MAX:
                    continue
                row = ListRow(backend, elements, n, {})
                for direction in ("in", "in+out"):
                    try:
                        key = (backend, item, direction)
                        if key not in compiled:
                            program = _module(PROGRAMS[direction].replace("ITEM", item))
                            compiled[key] = transpile.compile(program, backend=backend)
                        f = compiled[key]
                        row.problem = row.problem or _list_problem(direction, values, f(argument))
                        times = []
                        for _ in range(calls):
                            start = time.perf_counter()
                            f(argument)
                            times.append(time.perf_counter() - start)
                        row.seconds[direction] = statistics.median(times)
                    except Exception as exc:  # noqa: BLE001 - recorded in the table
                        row.problem = _reason(exc)
                        break
                shown = " / ".join(f"{row.per_element(d):.3f}" for d in row.seconds)
                log(f"  lists {backend:11s} {elements:17s} n={n:<8d} µs/element in, in+out: {shown} {row.problem}")
                rows.append(row)
    return rows, building


def mlp():
    """A LAYERS-deep WIDTH x WIDTH dense + bias + relu MLP: (program text, its constants, a float64 numpy reference)."""
    rng = np.random.default_rng(21)
    weights, body = [], []
    for layer in range(LAYERS):
        weights += [(rng.standard_normal((WIDTH, WIDTH)) * np.sqrt(2 / WIDTH)).astype("float32"),
                    (rng.standard_normal(WIDTH) * 0.1).astype("float32")]  # fmt: skip
        dense = f"nn.dense({f'%{layer - 1}' if layer else '%x'}, meta[relay.Constant][{2 * layer}], units={WIDTH})"
        body.append(f"  %{layer} = nn.relu(nn.bias_add({dense}, meta[relay.Constant][{2 * layer + 1}]));")
    ty = f"Tensor[({BATCH}, {WIDTH}), float32]"
    text = f"def @main(%x: {ty}) -> {ty} {{\n" + "\n".join(body) + f"\n  %{LAYERS - 1}\n}}\n"

    def reference(x):
        for w, b in zip(weights[::2], weights[1::2]):
            x = np.maximum(x.astype("float64") @ w.T + b, 0)
        return x

    return text, weights, reference


def _python_threads(f, inputs, expected, threads: int, calls: int) -> tuple[float, str]:
    """Wall seconds for `threads` Python threads making `calls` calls each, and a problem or ""."""
    barrier, results, failures = threading.Barrier(threads + 1), {}, []

    def work(k):
        barrier.wait()
        try:
            for _ in range(calls):
                results[k] = f(inputs[k])
        except Exception as exc:  # noqa: BLE001 - reported in the table
            failures.append(f"thread {k}: {_reason(exc)}")

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait()
    start = time.perf_counter()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - start
    wrong = [k for k in range(threads) if k in results and not np.array_equal(results[k], expected[k])]
    return wall, "; ".join(failures)[:200] or (f"threads {wrong} got other results" if wrong else "")


def _c_api(text: str, weights, x, workdir: Path):
    """(threads, calls) -> (wall seconds, each thread's last output, failed calls): the exported cpp library
    called from pthreads by bench/boundary_driver.c."""
    import transpile

    if shutil.which("gcc") is None:
        raise RuntimeError("needs gcc")
    library, driver = workdir / "lib", workdir / "driver"
    transpile.build(_module(text, weights, prelude=False), backend="cpp").export(library)
    subprocess.run(["gcc", "-std=c99", "-O2", f"-DBATCH={BATCH}", f"-DWIDTH={WIDTH}",
                    str(Path(__file__).with_name("boundary_driver.c")), f"-I{library}", f"-L{library}", "-lmain",
                    f"-Wl,-rpath,{library}", "-lpthread", "-o", str(driver)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    (workdir / "x.bin").write_bytes(np.ascontiguousarray(x, "float32").tobytes())

    def run(threads: int, calls: int):
        args = [str(driver), str(workdir / "x.bin"), str(workdir / "out.bin"), str(threads), str(calls)]
        seconds, failed = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()
        outs = np.frombuffer((workdir / "out.bin").read_bytes(), "float32").reshape(threads, BATCH, WIDTH)
        return float(seconds), outs, int(failed)

    return run


def measure_threads(backends, thread_counts, calls: int, rounds: int, log=print) -> list[ThreadRow]:
    """Item 21: rows for every (backend, thread count), the median wall time over `rounds`, results checked."""
    import transpile

    text, weights, reference = mlp()
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((BATCH, WIDTH)).astype("float32") for _ in range(max(thread_counts))]
    rows = []
    for backend in backends:
        workdir = Path(tempfile.mkdtemp(prefix="transpile-bench-boundary-"))
        try:
            module = _module(text, weights, prelude=False)
            f = transpile.compile(module, backend="cpp" if backend == "C API" else backend)
            expected = [f(x) for x in inputs]  # single-threaded results: every thread must get exactly these
            error = np.abs(expected[0] - reference(inputs[0])).max() / np.abs(reference(inputs[0])).max()
            if error > TOLERANCE:
                raise RuntimeError(f"differs from the numpy reference by {error:.1e} of its scale")
            run_c = _c_api(text, weights, inputs[0], workdir) if backend == "C API" else None
        except Exception as exc:  # noqa: BLE001 - the backend's rows say why
            rows += [ThreadRow(backend, t, calls, problem=_reason(exc)) for t in thread_counts]
            log(f"  threads {backend}: {rows[-1].problem}")
            shutil.rmtree(workdir, ignore_errors=True)
            continue
        for threads in thread_counts:
            row, walls = ThreadRow(backend, threads, calls), []
            for _ in range(rounds):
                if run_c:  # every pthread calls with inputs[0]
                    wall, outs, failed = run_c(threads, calls)
                    close = all(np.allclose(out, expected[0], rtol=1e-6, atol=1e-6) for out in outs)
                    problem = f"{failed} calls failed" if failed else "" if close else "a thread got another result"
                else:
                    wall, problem = _python_threads(f, inputs, expected, threads, calls)
                walls.append(wall)
                row.problem = row.problem or problem
            row.seconds = statistics.median(walls)
            log(f"  threads {backend:5s} x{threads}: {row.rate:8.0f} calls/s {row.problem}")
            rows.append(row)
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench boundary", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n up to 10^4, 3 calls; 20 calls per thread, 1 round")
    parser.add_argument("--out", default="bench/BOUNDARY.md", help="Markdown report (default: bench/BOUNDARY.md)")
    opts = parser.parse_args(argv)
    started, load_start, cores = time.perf_counter(), os.getloadavg(), os.cpu_count() or 1
    print(f"bench boundary: {cores} cores, load average {' / '.join(f'{v:.2f}' for v in load_start)},"
          f" TVM_NUM_THREADS={os.environ.get('TVM_NUM_THREADS', '(unset)')}", flush=True)  # fmt: skip
    if load_start[0] > 0.5 * cores:
        print(f"WARNING: load {load_start[0]:.2f} > 0.5 per core: the thread-scaling figures will mean little")
    if os.environ.get("TVM_NUM_THREADS") != "1":
        print("WARNING: TVM_NUM_THREADS is not 1: each call's kernels use a thread pool of their own")
    log = lambda message: print(message, flush=True)  # noqa: E731
    lists, building = measure_lists(LIST_BACKENDS, QUICK_SIZES if opts.quick else SIZES, 3 if opts.quick else 5, log)
    threads = measure_threads(THREAD_BACKENDS, THREAD_COUNTS, 20 if opts.quick else 200, 1 if opts.quick else 3, log)
    command = "python -m bench boundary" + ("" if not argv else " " + " ".join(argv))
    from .boundary_report import render

    text = render(lists, building, threads, command, load_start, time.perf_counter() - started)
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print("\n" + text + f"\nwrote {out}")
    return 0 if not any(r.problem for r in lists + threads) else 1
