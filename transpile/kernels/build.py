"""Compiling a program's kernels into one object file (and optionally portable C) with one tvm.compile."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from .iter_map_workaround import avoid_iter_map_padding
from .lower import KernelLoweringError, check_kernel_name, lower_kernel
from .threads import configure_threads

__all__ = [
    "KernelLibrary",
    "build_kernels",
    "build_c_source",
    "scheduled_functions",
    "symbol_of",
    "OBJECT_NAME",
    "C_SOURCE_NAME",
]

log = logging.getLogger(__name__)

OBJECT_NAME = "kernels.o"
C_SOURCE_NAME = "kernels.c"


def symbol_of(kernel_name: str) -> str:
    """The C symbol of a compiled kernel (TVM-FFI safe-call ABI)."""
    return f"__tvm_ffi_{kernel_name}"


@dataclass
class KernelLibrary:
    """Compiled kernels: the object file, each kernel's C symbol and the loaded TVM runtime module.

    `module[name](*tensors)` runs a kernel from Python (inputs then outputs, tvm.runtime tensors).
    `c_source_path` is set when built with c_source=True (TVM's `c` target, for the standalone bundle).
    """

    object_path: Path | None
    symbols: dict = field(default_factory=dict)
    module: object = None
    c_source_path: Path | None = None
    schedules: dict = field(default_factory=dict)
    target: object = None


def _check_names(kernels) -> None:
    seen = set()
    for kernel in kernels:
        check_kernel_name(kernel.name)
        if kernel.name in seen:
            raise KernelLoweringError(f"two kernels are named {kernel.name}")
        seen.add(kernel.name)


def scheduled_functions(kernels, target, schedule: bool = True, tune: int = 0) -> tuple[dict, dict]:
    """({kernel name: PrimFunc}, {kernel name: schedule kind}): each kernel lowered and scheduled
    for `target` by the hand schedules; with `tune` trials per kernel, tunable kernels are tuned by
    meta_schedule (tuning.py) and run the tuned schedule where it is faster (kind "meta_schedule")."""
    from .. import progress
    from .schedules import choose_schedule

    functions, kinds, unscheduled = {}, {}, {}
    with progress.stage("kernels: lower and schedule", total=len(kernels)) as stage:
        for kernel in kernels:
            func = unscheduled[kernel.name] = lower_kernel(kernel, schedule=False)
            if schedule:
                mod, kinds[kernel.name] = choose_schedule(func, kernel, target)
                func = mod[kernel.name]
            else:
                kinds[kernel.name] = "none"
            functions[kernel.name] = func
            stage.advance(1, detail=kernel.name)
    if schedule and tune and target.kind.name == "llvm":
        from .tuning import tune_kernels

        for name, choice in tune_kernels(kernels, unscheduled, functions, target, tune).items():
            if choice.schedule == "tuned":
                kinds[name] = "meta_schedule"
    # last, on what tvm.compile gets: tvm's FlattenBuffer would mis-simplify some indices (fuzz seed 122307)
    functions = {name: avoid_iter_map_padding(func) for name, func in functions.items()}
    return functions, kinds


def _lowered_module(kernels, target, schedule: bool, tune: int = 0):
    import tvm

    functions, kinds = scheduled_functions(kernels, target, schedule, tune)
    return tvm.IRModule(functions), kinds


def build_kernels(
    kernels, out_dir, target=None, schedule: bool = True, c_source: bool = False, tune: int = 0
) -> KernelLibrary:
    """Lowers, schedules and compiles `kernels` (LIR Kernels with unique C-identifier names) into
    `out_dir/kernels.o` for `target` (default: the host CPU); with c_source=True also writes
    `out_dir/kernels.c` from TVM's `c` target (scheduled for it: no vectorize/parallel); `tune`:
    trials per tunable kernel for meta_schedule (0: hand schedules only; see tuning.py).
    An empty list gives a library with no object file."""
    import tvm

    from .target import host_target

    configure_threads()
    kernels = list(kernels)
    _check_names(kernels)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = host_target() if target is None else target
    library = KernelLibrary(object_path=None, target=target)
    if not kernels:
        return library
    from .. import progress

    mod, library.schedules = _lowered_module(kernels, target, schedule, tune)
    library.object_path = out_dir / OBJECT_NAME
    with progress.stage(f"kernels: LLVM ({len(kernels)} kernels)"):
        executable = tvm.compile(mod, target=target)
        executable.mod.write_to_file(str(library.object_path))  # machine code is emitted here
    library.module = executable.mod
    library.symbols = {k.name: symbol_of(k.name) for k in kernels}
    if c_source:
        library.c_source_path = build_c_source(kernels, out_dir, schedule)
    return library


def build_c_source(kernels, out_dir, schedule: bool = True) -> Path:
    """Writes `out_dir/kernels.c`: `kernels` compiled by TVM's portable `c` target (scheduled for
    it: tiled, no vectorize/parallel), one `__tvm_ffi_<name>` function per kernel. No LLVM build."""
    import tvm

    from .target import c_target

    configure_threads()
    kernels = list(kernels)
    _check_names(kernels)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / C_SOURCE_NAME
    if not kernels:
        path.write_text("/* no kernels */\n")
        return path
    c_mod, _ = _lowered_module(kernels, c_target(), schedule)
    path.write_text(tvm.compile(c_mod, target=c_target()).mod.inspect_source())
    return path
