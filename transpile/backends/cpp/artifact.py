"""CppArtifact: a built native library (plus its C++ source and C header); load() gives the checked callable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ...errors import TranspileError
from ..base import Artifact
from ..native import load_library

__all__ = ["CppArtifact"]


class CppArtifact(Artifact):
    """The library directory and its info (entry signature, ADT tags, exported names)."""

    def __init__(self, directory: Path, info: dict):
        super().__init__("cpp", info["entry"])
        self.directory = Path(directory)
        self.info = info
        self._callable = None

    @property
    def library_path(self) -> Path:
        return self.directory / self.info["library"]

    @property
    def header_path(self) -> Path | None:
        name = self.info.get("header")
        return self.directory / name if name else None

    @property
    def source(self) -> str:
        return (self.directory / self.info["source"]).read_text(encoding="utf-8")

    @property
    def module(self):
        """The loaded TVM runtime module: ["transpile_call"], ["<entry>"], W0 functions."""
        return load_library(self.library_path)

    def load(self):
        if self._callable is None:
            from .boundary import make_native_entry

            function = self.module["transpile_call"]  # looked up once; calls go straight to it
            # Tensor-only entries also export a typed function: no flat arrays to build or read.
            typed = self.module[self.info["export_name"]] if self.info.get("tensor_entry") else None
            self._callable = make_native_entry(function, self.info, typed)
        return self._callable

    def write_files(self, directory: Path) -> dict:
        directory = Path(directory)
        files = [self.info["library"], self.info["source"], "transpile_rt.h"]
        if (self.directory / "transpile_rt_common.h").is_file():  # libraries built before the header split lack it
            files.append("transpile_rt_common.h")
        if self.info.get("header"):
            files.append(self.info["header"])
        for name in files:
            shutil.copy2(self.directory / name, directory / name)
        (directory / "info.json").write_text(json.dumps(self.info, indent=1, sort_keys=True))
        return {"info": "info.json", "library": self.info["library"], "header": self.info.get("header")}

    @classmethod
    def from_directory(cls, directory: Path, manifest: dict) -> "CppArtifact":
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
        return f"<CppArtifact entry={self.entry!r} library={str(self.library_path)!r}>"
