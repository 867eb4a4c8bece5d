"""PythonArtifact: generated source plus entry signature; loads as a module registered in linecache."""

from __future__ import annotations

import hashlib
import linecache
import types
from pathlib import Path

from ...errors import TranspileError
from ..base import Artifact
from .boundary import make_entry

__all__ = ["PythonArtifact", "load_source", "SOURCE_FILE"]

SOURCE_FILE = "program.py"


def _fake_filename(source: str, entry: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]
    return f"<transpile:{entry}:{digest}>"


def load_source(source: str, filename: str, module_name: str | None = None) -> types.ModuleType:
    """Execute generated `source` as a fresh module whose code objects point at `filename`.

    The text is put into linecache under that name (no mtime, so checkcache keeps it), so
    tracebacks, pdb and inspect.getsource show the generated lines.
    """
    if not Path(filename).is_file():
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    name = module_name or "transpile_generated_" + hashlib.sha256(source.encode()).hexdigest()[:12]
    module = types.ModuleType(name)
    module.__file__ = filename
    code = compile(source, filename, "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


class PythonArtifact(Artifact):
    """The generated module's source and the data describing its entry function."""

    def __init__(self, source: str, signature: dict, filename: str | None = None):
        super().__init__("python", signature["relay_entry"])
        self.source = source
        self.signature = signature
        self.filename = filename or _fake_filename(source, signature["relay_entry"])
        self._module = None

    @property
    def module(self) -> types.ModuleType:
        """The executed generated module (created on first use, shared by every load())."""
        if self._module is None:
            self._module = load_source(self.source, self.filename)
        return self._module

    def load(self):
        name = self.signature["function"]
        fn = getattr(self.module, name, None)
        if fn is None:
            raise TranspileError(f"the generated module {self.filename} has no entry function {name}")
        return make_entry(fn, self.signature)

    def write_files(self, directory: Path) -> dict:
        (Path(directory) / SOURCE_FILE).write_text(self.source, encoding="utf-8")
        return {"source": SOURCE_FILE, "signature": self.signature}

    @classmethod
    def from_directory(cls, directory: Path, manifest: dict) -> "PythonArtifact":
        data = manifest.get("data") or {}
        path = Path(directory) / data.get("source", SOURCE_FILE)
        signature = data.get("signature")
        if not isinstance(signature, dict):
            raise TranspileError(f"{Path(directory)} has no entry signature in its manifest")
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise TranspileError(f"cannot read the exported program {path}: {exc.strerror or exc}") from None
        return cls(source, signature, filename=str(path.resolve()))

    def __repr__(self) -> str:
        return f"<PythonArtifact entry={self.entry!r} file={self.filename!r}>"
