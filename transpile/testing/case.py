"""A conformance case: a Relay program, its inputs, an independently computed expected result, its features."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..runtime import ADTValue, RefValue

__all__ = ["Case", "VERSION_HEADER"]

VERSION_HEADER = '#[version = "0.0.5"]'


@dataclass(frozen=True, eq=False)
class Case:
    """One program run on every backend.

    - `source`: Relay text (the version header is added when missing); `prelude=True` loads the
      Prelude (List, Option, Tree, nat, map, foldl, ...) into the module first.
    - `inputs`: Python values passed to `entry` (copied afresh for every call).
    - `expected`: the result as a Python value (ndarray, tuple, ADTValue, RefValue), or a
      function `expected(*inputs)` computing it with hand-written numpy. Never the output of
      transpile's own interpreter.
    - `apply`: when the result is a function (a closure), the arguments it is called with; the
      value of that call is compared with `expected`.
    - `features`: what the program needs from a backend (checked against `required_features`).
    - `raises`: `(exception type, message regex)` for calls that must fail.
    - `inputs_after`: the inputs as the caller sees them after the call (programs writing into
      RefValue arguments), compared like results.
    """

    name: str
    source: str
    inputs: tuple = ()
    expected: Any = None
    entry: str = "main"
    prelude: bool = False
    features: frozenset = frozenset()
    rtol: float = 1e-5
    atol: float = 1e-6
    raises: tuple | None = None
    apply: tuple | None = None
    inputs_after: tuple | None = None
    theme: str = ""
    description: str = ""

    def __post_init__(self):
        object.__setattr__(self, "features", frozenset(self.features))
        object.__setattr__(self, "inputs", tuple(self.inputs))

    @property
    def text(self) -> str:
        """The full Relay text, with the version header."""
        body = self.source.strip("\n")
        return body if body.lstrip().startswith("#[version") else f"{VERSION_HEADER}\n{body}\n"

    @property
    def source_name(self) -> str:
        return f"conformance/{self.theme or 'case'}/{self.name}.relay"

    def fresh_inputs(self) -> tuple:
        """A deep copy of the inputs, so a program writing into a RefValue cannot affect other runs."""
        return copy.deepcopy(self.inputs)

    def fresh_apply_args(self) -> tuple:
        return copy.deepcopy(self.apply) if self.apply is not None else ()

    def expected_value(self):
        expected = self.expected
        if callable(expected) and not isinstance(expected, (np.ndarray, np.generic, ADTValue, RefValue, tuple)):
            return expected(*self.fresh_inputs())
        return expected

    def __repr__(self) -> str:
        return f"Case({self.name!r})"
