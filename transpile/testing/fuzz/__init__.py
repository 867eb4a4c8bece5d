"""Fuzzers of the project: random well-typed programs run differentially on every backend against the
interpreter, and mutated corpus programs through the parser and type checker.

    python -m transpile.testing.fuzz differential --programs 10000 --backends python,cpp,tir --seed 0
    python -m transpile.testing.fuzz mutation --mutants 10000
"""

from .generator import GeneratedProgram, GeneratorConfig, generate_program

__all__ = ["GeneratedProgram", "GeneratorConfig", "generate_program"]
