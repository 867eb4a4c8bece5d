"""The `tir` backend: the first-order program as one TVM IRModule of PrimFuncs, compiled with tvm.compile.

`emit(program)` returns the IRModule's TVMScript (`mod.script()`, re-parses with `tvm.script`):
a scheduled PrimFunc per kernel (shared kernel compiler), a PrimFunc per global function in
destination-passing style, and `main` for the entry. `build(program)` returns a TirArtifact whose
library (`tvm.runtime.load_module(path)`) has `main(*inputs)` returning the result tensor (or an
array of the flattened result tensors) like the cpp backend, the W0 interface
(`set_input(index or name, tensor)`, `run()`, `get_output(index)`, `get_num_inputs`,
`get_num_outputs`, `get_input_index`) and the public PrimFuncs under their symbols (`tir_main`:
inputs, the weights blob when the program has constants, outputs; packed kernels by kernel name).
Constants are one 64-byte aligned blob linked into the library from binary data (backends/weights.py).
Builds are cached under the framework's source key (`cached_build`), so a hit lowers nothing.
Options: `verify` (check the LIR first, default True), `schedule` (schedule kernels, default True),
`profile` (a profiling build timing every kernel call, its own cache entry; see transpile/profiling.py),
`tune` (True or trials per kernel: meta_schedule tuning, as for cpp; see transpile/kernels/tuning.py).

Supported: tensors (static shapes) and tuples of tensors, `if` on scalars, calls between global
functions, recursion (self tail calls become `while` loops; other calls are TIR calls; the library's `main`
runs recursive programs on a 1 GiB stack, and every function on a call cycle starts with a stack check,
so recursion past it raises "recursion deeper than the stack allows" instead of crashing;
TRANSPILE_STACK_MIB lowers the budget), monomorphized polymorphism. A kernel whose requirements
(e.g. take from a non-empty axis) fail raises EvaluationError before it runs, with cpp's message.
Not supported: closures, ADTs, references, dynamic shapes (refused when compiling).
"""

from __future__ import annotations

from pathlib import Path

from ...errors import TranspileError
from ..base import CONSUMES_LIR, NON_TAIL_RECURSION, POLYMORPHISM, RECURSION, Backend
from ..native import NativeBuildCache
from .artifact import TirArtifact

__all__ = ["TirBackend", "TirArtifact"]

_OPTIONS = {"verify", "schedule", "profile", "tune"}


def _checked(options: dict) -> dict:
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise TranspileError(
            f"backend 'tir' does not take option(s) {', '.join(unknown)}; it takes {', '.join(sorted(_OPTIONS))}"
        )
    return options


def _verified(program, options: dict):
    if options.get("verify", True):
        from ...lir import verify

        verify(program)
    return program


class TirBackend(NativeBuildCache, Backend):
    """TVM TIR: PrimFuncs for kernels and functions in one IRModule, compiled by tvm.compile for the host."""

    name = "tir"
    capabilities = frozenset({POLYMORPHISM, RECURSION, NON_TAIL_RECURSION})
    consumes = CONSUMES_LIR
    artifact_class = TirArtifact
    pipeline_options = {"alter_layout": True}  # kernels compiled by TVM: packed NCHWc convolutions
    description = "TVM TIR IRModule (kernel, function and main PrimFuncs) compiled with tvm.compile; W0 interface"

    def emit(self, program, **options) -> str:
        from .lowering import lower_program

        options = _checked(options)
        lowered = lower_program(_verified(program, options), schedule=options.get("schedule", True))
        return lowered.module.script()

    def build(self, program, source_key: str | None = None, **options) -> TirArtifact:
        """Builds (or finds in the cache) the library of `program`; `source_key` is the framework's
        key taken before lowering (see Backend.cached_build), else a key is taken from the LIR."""
        from ...lir import print_program
        from ...relay.deep import run_deep
        from ..signature import signature_of
        from .build import build_library

        options = _checked(dict(options))
        _verified(program, options)
        signature = signature_of(program, "main")
        lir_text = None if source_key else run_deep(print_program, program)
        build_options = {"schedule": options.get("schedule", True)}
        if options.get("profile"):
            build_options["profile"] = True
        from ...kernels.tuning import trials_of

        tune = trials_of(options.get("tune"))
        if tune:
            build_options["tune"] = tune
        result = build_library(program, lir_text, signature, build_options, source_key=source_key)
        return TirArtifact(result.directory, result.info)

    def load_artifact(self, directory: Path, manifest: dict) -> TirArtifact:
        return TirArtifact.from_directory(directory, manifest)
