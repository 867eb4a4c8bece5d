"""The `tir` backend: the first-order program as one TVM IRModule of PrimFuncs, compiled with tvm.compile.

`emit(program)` returns the IRModule's TVMScript (`mod.script()`, re-parses with `tvm.script`):
a scheduled PrimFunc per kernel (shared kernel compiler), a PrimFunc per global function in
destination-passing style, and `main` for the entry. `build(program)` returns a TirArtifact whose
library (`tvm.runtime.load_module(path)`) has `main(*inputs)` returning the result tensor (or an
array of the flattened result tensors) like the cpp backend, the W0 interface
(`set_input(index or name, tensor)`, `run()`, `get_output(index)`, `get_num_inputs`,
`get_num_outputs`, `get_input_index`) and the public PrimFuncs under their symbols (`tir_main`:
inputs, constants, outputs; packed kernels by kernel name). Constants are embedded in the library.
Options: `verify` (check the LIR first, default True), `schedule` (schedule kernels, default True).

Supported: tensors (static shapes) and tuples of tensors, `if` on scalars, calls between global
functions, recursion (self tail calls become `while` loops; other calls are TIR calls; the library's `main`
runs recursive programs on a 1 GiB stack, and every function on a call cycle starts with a stack check,
so recursion past it raises "recursion deeper than the stack allows" instead of crashing;
TRANSPILE_STACK_MIB lowers the budget), monomorphized polymorphism. Not supported: closures, ADTs,
references, dynamic shapes.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import TranspileError
from ..base import CONSUMES_LIR, NON_TAIL_RECURSION, POLYMORPHISM, RECURSION, Backend
from .artifact import TirArtifact

__all__ = ["TirBackend", "TirArtifact"]

_OPTIONS = {"verify", "schedule"}


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


class TirBackend(Backend):
    """TVM TIR: PrimFuncs for kernels and functions in one IRModule, compiled by tvm.compile for the host."""

    name = "tir"
    capabilities = frozenset({POLYMORPHISM, RECURSION, NON_TAIL_RECURSION})
    consumes = CONSUMES_LIR
    description = "TVM TIR IRModule (kernel, function and main PrimFuncs) compiled with tvm.compile; W0 interface"

    def emit(self, program, **options) -> str:
        from .lowering import lower_program

        options = _checked(options)
        lowered = lower_program(_verified(program, options), schedule=options.get("schedule", True))
        return lowered.module.script()

    def build(self, program, **options) -> TirArtifact:
        from ...lir import print_program
        from ..signature import signature_of
        from .build import build_library

        options = _checked(dict(options))
        _verified(program, options)
        signature = signature_of(program, "main")
        result = build_library(program, print_program(program), signature, {"schedule": options.get("schedule", True)})
        return TirArtifact(result.directory, result.info)

    def load_artifact(self, directory: Path, manifest: dict) -> TirArtifact:
        return TirArtifact.from_directory(directory, manifest)
