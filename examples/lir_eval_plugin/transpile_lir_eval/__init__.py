"""An example third-party transpile backend that evaluates the little IR directly with numpy."""

from __future__ import annotations

from transpile.backends.base import ALL_FEATURES, Artifact, Backend
from transpile.lir import print_program

from .evaluator import ProgramEvaluator

__all__ = ["LirEvalBackend", "LirEvalArtifact"]

__version__ = "0.1.0"


class LirEvalBackend(Backend):
    """Runs LIR programs statement by statement; kernels use the registry's numpy implementations."""

    name = "lir-eval"
    capabilities = ALL_FEATURES
    description = "evaluates the little IR directly (example third-party plugin)"

    def emit(self, program, **options) -> str:
        return print_program(program)

    def build(self, program, **options) -> "LirEvalArtifact":
        return LirEvalArtifact(program)


class LirEvalArtifact(Artifact):
    """Holds the LIR program in memory (this example backend does not export artifacts)."""

    def __init__(self, program):
        super().__init__("lir-eval", program.entry)
        self.program = program
        self._evaluator = None

    def load(self):
        if self._evaluator is None:
            self._evaluator = ProgramEvaluator(self.program)
        return self._evaluator.entry_callable()
