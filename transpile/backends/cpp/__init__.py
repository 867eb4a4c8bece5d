"""The `cpp` backend: LIR -> readable C++17 -> one native shared library linking TVM-compiled kernels.

`emit(program)` returns the C++ source; `build(program)` returns a CppArtifact whose library
(a TVM-FFI module: `tvm.runtime.load_module(path)["main"]`, W0 `set_input`/`run`/`get_output`,
and a plain C API declared in `<entry>.h`) comes from a content-addressed cache (see build.py).
Options: `verify` (check the LIR first, default True), `schedule` (schedule kernels, default True),
`profile` (a profiling build timing every kernel call, its own cache entry; see transpile/profiling.py),
`tune` (True or trials per kernel: meta_schedule tunes the matmul / conv kernels, keeping the hand
schedule where it is as fast; see transpile/kernels/tuning.py).
"""

from __future__ import annotations

from pathlib import Path

from ...errors import TranspileError
from ..base import (
    ADTS,
    CLOSURES,
    CONSUMES_LIR,
    DYNAMIC_SHAPES,
    NON_TAIL_RECURSION,
    POLYMORPHISM,
    RECURSION,
    REFS,
    Backend,
)
from ..native import NativeBuildCache
from .artifact import CppArtifact

__all__ = ["CppBackend", "CppArtifact"]

_OPTIONS = {"verify", "schedule", "profile", "tune"}


def _checked(options: dict) -> dict:
    unknown = sorted(set(options) - _OPTIONS)
    if "standalone" in unknown:
        raise TranspileError(
            "a standalone source bundle is not an artifact: write it with "
            "transpile.backends.cpp.standalone.build_bundle(mod, out_dir) or `transpile build -b cpp --standalone`"
        )
    if unknown:
        raise TranspileError(
            f"backend 'cpp' does not take option(s) {', '.join(unknown)}; it takes {', '.join(sorted(_OPTIONS))}"
        )
    return options


def _tune_trials(options: dict) -> int:
    """meta_schedule trials per tunable kernel asked for by the `tune` option (0: not tuned)."""
    from ...kernels.tuning import trials_of

    return trials_of(options.get("tune"))


def _signature_info(program, generated) -> dict:
    from ..signature import signature_of

    signature = signature_of(program, generated.export_name)
    tags = {adt.name: {c.relay_name: c.tag for c in adt.constructors} for adt in program.adts}
    return {"signature": signature, "tags": tags}


class CppBackend(NativeBuildCache, Backend):
    """Native code: C++17 over tvm::ffi plus TVM-compiled kernels, linked into one shared library."""

    name = "cpp"
    capabilities = frozenset({CLOSURES, ADTS, REFS, POLYMORPHISM, RECURSION, NON_TAIL_RECURSION, DYNAMIC_SHAPES})
    consumes = CONSUMES_LIR
    artifact_class = CppArtifact
    pipeline_options = {"alter_layout": True}  # kernels compiled by TVM: packed NCHWc convolutions
    description = "C++17 + TVM kernels in one shared library (TVM-FFI module, W0 interface, C API)"

    def emit(self, program, **options) -> str:
        from .codegen import generate

        options = _checked(options)
        return generate(program, verify=options.get("verify", True)).source

    def build(self, program, source_key: str | None = None, **options) -> CppArtifact:
        """Builds (or finds in the cache) the library of `program`; `source_key` is the framework's
        key taken before lowering (see Backend.cached_build), else a key is taken from the code."""
        from ...lir import print_program
        from ...relay.deep import run_deep
        from .build import build_library
        from .codegen import generate

        options = _checked(dict(options))
        profile = bool(options.get("profile", False))
        tune = _tune_trials(options)
        generated = run_deep(generate, program, options.get("verify", True), profile=profile)
        lir_text = run_deep(print_program, program)
        info = _signature_info(program, generated)
        if profile:  # what the report joins with the library's timing table, row by row
            from ...profiling import describe_kernels

            info["profile_kernels"] = describe_kernels(generated.extern_kernels)
        result = build_library(
            generated,
            lir_text,
            program.entry,
            info,
            {
                "schedule": options.get("schedule", True),
                **({"profile": True} if profile else {}),
                **({"tune": tune} if tune else {}),
            },
            source_key=source_key,
        )
        return CppArtifact(result.directory, result.info)

    def load_artifact(self, directory: Path, manifest: dict) -> CppArtifact:
        return CppArtifact.from_directory(directory, manifest)
