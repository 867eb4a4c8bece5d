"""TirArtifact: a built tir library (plus its TVMScript); load() gives the checked Python callable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ...errors import TranspileError
from ..base import Artifact
from ..native import load_library

__all__ = ["TirArtifact"]


class TirArtifact(Artifact):
    """The library directory and its info (entry signature, input names, kernel schedules)."""

    def __init__(self, directory: Path, info: dict):
        super().__init__("tir", info["entry"])
        self.directory = Path(directory)
        self.info = info
        self._callable = None

    @property
    def library_path(self) -> Path:
        return self.directory / self.info["library"]

    @property
    def script(self) -> str:
        """The TVMScript of the compiled IRModule."""
        return (self.directory / self.info["script"]).read_text(encoding="utf-8")

    @property
    def module(self):
        """The loaded TVM runtime module: ["main"](*inputs), W0 functions, every PrimFunc by symbol."""
        return load_library(self.library_path)

    def load(self):
        if self._callable is None:
            from .boundary import make_tir_entry

            self._callable = make_tir_entry(self.module["main"], self.info)
        return self._callable

    def write_files(self, directory: Path) -> dict:
        directory = Path(directory)
        for name in (self.info["library"], self.info["script"], "program.c", "tir_program.h"):
            shutil.copy2(self.directory / name, directory / name)
        (directory / "info.json").write_text(json.dumps(self.info, indent=1, sort_keys=True))
        return {"info": "info.json", "library": self.info["library"], "script": self.info["script"]}

    @classmethod
    def from_directory(cls, directory: Path, manifest: dict) -> "TirArtifact":
        data = manifest.get("data") or {}
        path = Path(directory) / data.get("info", "info.json")
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise TranspileError(f"cannot read {path}: {exc}") from None
        if not (Path(directory) / info.get("library", "")).is_file():
            raise TranspileError(f"{directory} has no native library {info.get('library')!r}")
        return cls(Path(directory), info)

    def __repr__(self) -> str:
        return f"<TirArtifact entry={self.entry!r} library={str(self.library_path)!r}>"
