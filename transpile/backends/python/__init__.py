"""The `python` backend: readable Python (ast -> astor -> black) over numpy, from the little IR.

`emit(program)` returns the source of a standalone module (it imports numpy and
transpile.runtime only); `build(program)` returns a PythonArtifact whose `load()` gives the
checked entry callable and whose `export(path)` writes `program.py` plus the manifest.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import TranspileError
from ..base import ADTS, CLOSURES, CONSUMES_LIR, DYNAMIC_SHAPES, NON_TAIL_RECURSION, POLYMORPHISM, RECURSION, REFS
from ..base import Backend
from .artifact import PythonArtifact, load_source
from ..signature import signature_of
from .codegen import ModuleWriter
from .pyast import render

__all__ = ["PythonBackend", "PythonArtifact", "generate", "load_source"]

_OPTIONS = {"line_length", "verify", "format"}


def generate(program, line_length: int = 100, verify: bool = True, format: bool = True) -> tuple[str, dict]:
    """(source, entry signature) for an LIR program; the program is verified first by default.
    `format=False` skips black (same code, astor's layout; a build ~2x faster)."""
    from ...lir import verify as verify_program
    from ...relay.deep import run_deep

    if verify:
        verify_program(program)

    def build():
        writer = ModuleWriter(program)
        source = render(writer.module(), line_length=line_length, blobs=writer.blobs, format=format)
        signature = signature_of(program, writer.entry_name)
        # Which generated functions are kernels (and of which operators): run-time failures name them.
        signature["kernels"] = {writer.names.lookup(("kernel", k.name)): list(k.ops) for k in program.kernels}
        return source, signature

    return run_deep(build)


class PythonBackend(Backend):
    """Readable Python with numpy kernels; handles every feature of the LIR."""

    name = "python"
    capabilities = frozenset({CLOSURES, ADTS, REFS, POLYMORPHISM, RECURSION, NON_TAIL_RECURSION, DYNAMIC_SHAPES})
    consumes = CONSUMES_LIR
    description = "readable Python (ast, astor, black) calling numpy; self tail calls become loops"

    def emit(self, program, **options) -> str:
        return generate(program, **_checked(options))[0]

    def build(self, program, **options) -> PythonArtifact:
        source, signature = generate(program, **_checked(options))
        return PythonArtifact(source, signature)

    def load_artifact(self, directory: Path, manifest: dict) -> PythonArtifact:
        return PythonArtifact.from_directory(directory, manifest)


def _checked(options: dict) -> dict:
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise TranspileError(
            f"backend 'python' does not take option(s) {', '.join(unknown)}; it takes {', '.join(sorted(_OPTIONS))}"
        )
    return options
