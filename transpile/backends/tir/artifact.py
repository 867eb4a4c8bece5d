"""TirArtifact: a built tir library (plus its TVMScript); load() gives the checked Python callable."""

from __future__ import annotations

from ..native import NativeArtifact

__all__ = ["TirArtifact"]


class TirArtifact(NativeArtifact):
    """The library directory and its info (entry signature, input names, kernel schedules)."""

    backend_name = "tir"

    @property
    def script(self) -> str:
        """The TVMScript of the compiled IRModule."""
        return (self.directory / self.info["script"]).read_text(encoding="utf-8")

    @property
    def module(self):
        """The loaded TVM-FFI module: ["main"](*inputs), W0 (["default"](dev) executors, module-level functions), every PrimFunc by symbol."""
        return super().module

    def make_callable(self):
        from .boundary import make_tir_entry

        return make_tir_entry(self.module["main"], self.info)

    def exported_files(self) -> list[str]:
        return [self.info["library"], self.info["script"], "program.c", "tir_program.h"]

    def manifest_data(self) -> dict:
        return {"library": self.info["library"], "script": self.info["script"]}
