"""CppArtifact: a built native library (plus its C++ source and C header); load() gives the checked callable."""

from __future__ import annotations

from pathlib import Path

from ..native import NativeArtifact

__all__ = ["CppArtifact"]


class CppArtifact(NativeArtifact):
    """The library directory and its info (entry signature, ADT tags, exported names)."""

    backend_name = "cpp"

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
        return super().module

    def make_callable(self):
        from .boundary import make_native_entry

        function = self.module["transpile_call"]  # looked up once; calls go straight to it
        # Tensor-only entries also export a typed function: no flat arrays to build or read.
        typed = self.module[self.info["export_name"]] if self.info.get("tensor_entry") else None
        return make_native_entry(function, self.info, typed)

    def exported_files(self) -> list[str]:
        files = [self.info["library"], self.info["source"], "transpile_rt.h"]
        if (self.directory / "transpile_rt_common.h").is_file():  # libraries built before the header split lack it
            files.append("transpile_rt_common.h")
        if self.info.get("header"):
            files.append(self.info["header"])
        return files

    def manifest_data(self) -> dict:
        return {"library": self.info["library"], "header": self.info.get("header")}
