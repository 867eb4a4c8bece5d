"""The backend conformance suite: Relay programs with independently computed results, run on any backend.

    pytest --pyargs transpile.testing --transpile-backend NAME

Cases live in `transpile.testing.cases` (one module per theme); `run_case(backend, case)` runs one.
Call-time argument errors (wrong arity, shape, dtype or kind of value) must raise
`transpile.EvaluationError`; a backend lacking a feature must raise `UnsupportedFeatureError` at compile time.
"""

from __future__ import annotations

from .case import Case
from .compare import assert_values_close

__all__ = ["Case", "assert_values_close", "all_cases", "run_case"]


def all_cases() -> list[Case]:
    from .cases import ALL_CASES

    return list(ALL_CASES)


def run_case(backend: str, case: Case) -> None:
    from .runner import run_case as run

    run(backend, case)
