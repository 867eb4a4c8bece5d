"""The `interpreter` backend: runs the type-checked Relay module on the reference interpreter."""

from __future__ import annotations

from pathlib import Path

from ..errors import TranspileError
from .base import ALL_FEATURES, CONSUMES_RELAY, Artifact, Backend

__all__ = ["InterpreterBackend", "InterpreterArtifact"]

_SOURCE_FILE = "program.relay"


class InterpreterArtifact(Artifact):
    """A typed Relay module plus its entry; loading it gives a function calling relay.evaluate."""

    def __init__(self, mod, entry: str):
        super().__init__(InterpreterBackend.name, entry)
        self.mod = mod

    def load(self):
        from ..relay import evaluate

        mod, entry = self.mod, self.entry

        def run(*args):
            return evaluate(mod, *args, entry=entry)

        run.__name__ = run.__qualname__ = entry if entry.isidentifier() else "run"
        run.__doc__ = f"Runs @{entry} on the reference interpreter."
        return run

    def write_files(self, directory: Path) -> dict:
        (directory / _SOURCE_FILE).write_text(self.mod.astext(), encoding="utf-8")
        return {"source": _SOURCE_FILE}


class InterpreterBackend(Backend):
    """Every feature, no code generation: `emit` gives the Relay text, `build` wraps the module."""

    name = "interpreter"
    capabilities = ALL_FEATURES
    consumes = CONSUMES_RELAY
    description = "the reference interpreter (numpy), running the type-checked Relay module"

    def emit(self, program, entry: str = "main", **options) -> str:
        _no_options(options)
        return program.astext()

    def build(self, program, entry: str = "main", **options) -> InterpreterArtifact:
        _no_options(options)
        return InterpreterArtifact(program, entry)

    def load_artifact(self, directory: Path, manifest: dict) -> InterpreterArtifact:
        from ..relay import parse
        from ..relay.transform import InferType

        name = manifest.get("data", {}).get("source", _SOURCE_FILE)
        path = Path(directory) / name
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise TranspileError(f"cannot read the exported program {path}: {exc.strerror or exc}") from None
        mod = InferType()(parse(text, source_name=str(path)))
        if manifest["entry"] not in mod:
            raise TranspileError(f"{path} has no function @{manifest['entry']}")
        return InterpreterArtifact(mod, manifest["entry"])


def _no_options(options: dict) -> None:
    if options:
        names = ", ".join(sorted(options))
        raise TranspileError(f"backend 'interpreter' takes no options, got: {names}")
