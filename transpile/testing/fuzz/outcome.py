"""What running a program on one backend gave, and how it compares with the interpreter's (the reference)."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np

from ...errors import TranspileError, UnsupportedFeatureError
from ..compare import assert_values_close

__all__ = ["ErrorInfo", "Outcome", "classify", "FAILURES", "STATUSES", "compare_values", "error_key"]

# Statuses, in the summary table's order; the ones in FAILURES make a run fail.
STATUSES = (
    "match",  # same value as the interpreter
    "agree_error",  # the interpreter raised a TranspileError, the backend too
    "dead_error",  # the interpreter raised only in dead code the optimizer removes; the backend matches it there
    "skipped",  # the program needs a feature the backend does not declare (closures on tir...)
    "unsupported",  # the backend raised UnsupportedFeatureError
    "mismatch",  # a different value
    "missing_error",  # the interpreter raised, the backend returned a value
    "spurious_error",  # the backend raised a TranspileError where the interpreter returned a value
    "internal_error",  # an exception that is not a TranspileError
    "reference_error",  # the interpreter itself raised an exception that is not a TranspileError
    "crash",  # the worker process running the backend died (a signal)
    "hang",  # the worker gave no answer within the time limit
)
FAILURES = frozenset(
    {"mismatch", "missing_error", "spurious_error", "internal_error", "reference_error", "crash", "hang"}
)

# float32 results may differ in the last bits between correct backends (summation order, FMA,
# vectorized transcendental functions); the generator keeps such values away from anything
# discontinuous, so these tolerances only have to absorb a few ulps amplified by later arithmetic.
RTOL = {"float32": 2e-4, "float64": 1e-9}
ATOL = {"float32": 1e-5, "float64": 1e-12}


@dataclass(frozen=True)
class ErrorInfo:
    """What an exception was, in a form that crosses process boundaries (see isolation.py)."""

    type_name: str
    message: str
    is_transpile: bool
    is_unsupported: bool = False
    has_location: bool = False
    crashed: bool = False  # the process running the program died
    hung: bool = False  # no answer within the time limit (the process was killed)

    @classmethod
    def of(cls, exc: BaseException) -> "ErrorInfo":
        return cls(
            type(exc).__name__,
            str(exc),
            isinstance(exc, TranspileError),
            isinstance(exc, UnsupportedFeatureError),
            getattr(exc, "span", None) is not None,
        )


@dataclass
class Outcome:
    """A value, or the error raised at `stage` ("compile" or "run"); exceptions are kept as ErrorInfo."""

    value: object = None
    error: ErrorInfo | BaseException | None = None
    stage: str = "run"

    def __post_init__(self):
        if isinstance(self.error, BaseException):
            self.error = ErrorInfo.of(self.error)

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @property
    def is_internal(self) -> bool:
        return self.error is not None and not self.error.is_transpile

    @property
    def is_unsupported(self) -> bool:
        return self.error is not None and self.error.is_unsupported

    @property
    def crashed(self) -> bool:
        return self.error is not None and self.error.crashed

    @property
    def hung(self) -> bool:
        return self.error is not None and self.error.hung

    def describe(self) -> str:
        if self.error is None:
            return "a value"
        first = self.error.message.splitlines()[0] if self.error.message else ""
        return f"{self.error.type_name} at {self.stage}: {first}"


def _float_dtypes(value, found: set) -> set:
    if isinstance(value, np.ndarray):
        found.add(value.dtype.name)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _float_dtypes(v, found)
    elif hasattr(value, "fields"):
        for v in value.fields:
            _float_dtypes(v, found)
    return found


# float dtypes a program computes in: annotations and attributes (`float32`), literals (`1f`, `2.5`, `1f16`)
_FLOAT_DTYPE_NAME = re.compile(r"\bfloat(16|32|64)\b")
_FLOAT_LITERAL = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?f(16|32|64)?\b")
_DECIMAL_LITERAL = re.compile(r"(?<![\w.%])\d+\.\d+(?![\w.])")  # float32 without a suffix


def program_float_dtypes(text: str) -> set:
    """The float dtypes a program's text computes in. A float64 result cast from float32 math is only
    as exact as float32 (exp differs by an ulp between numpy and LLVM: fuzz seed 110461)."""
    found = {f"float{bits}" for bits in _FLOAT_DTYPE_NAME.findall(text)}
    found |= {f"float{bits or 32}" for bits in _FLOAT_LITERAL.findall(text)}
    if _DECIMAL_LITERAL.search(text):
        found.add("float32")
    return found


def compare_values(actual, expected, program_text: str | None = None) -> str | None:
    """None when equal within the tolerances of the floats involved (the values', and those the
    program computes in when its text is given), else what differs."""
    dtypes = _float_dtypes(expected, set())
    if program_text is not None:
        dtypes |= program_float_dtypes(program_text)
    rtol = max([RTOL.get(d, 0.0) for d in dtypes] + [1e-9])
    atol = max([ATOL.get(d, 0.0) for d in dtypes] + [1e-12])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_values_close(actual, expected, rtol=rtol, atol=atol)
    except AssertionError as exc:
        return str(exc).strip()
    return None


def classify(reference: Outcome, outcome: Outcome, program_text: str | None = None) -> tuple[str, str]:
    """(status, detail) of a backend's outcome against the interpreter's."""
    if reference.is_internal:
        return "reference_error", reference.describe()
    if outcome.crashed:
        return "crash", outcome.describe()
    if outcome.hung:
        return "hang", outcome.describe()
    if outcome.is_unsupported:
        return "unsupported", outcome.describe()
    if outcome.is_internal:
        return "internal_error", outcome.describe()
    if reference.is_error:
        if outcome.is_error:
            return "agree_error", outcome.describe()
        return "missing_error", f"the interpreter raised {reference.describe()}; the backend returned a value"
    if outcome.is_error:
        return "spurious_error", outcome.describe()
    difference = compare_values(outcome.value, reference.value, program_text)
    if difference is None:
        return "match", ""
    return "mismatch", difference


def error_key(status: str, detail: str) -> str:
    """A failure's class: its status and message with names, numbers and locations blanked out."""
    first = detail.splitlines()[0] if detail else ""
    first = re.sub(r"fuzz[^:]*:\d+:\d+", "LOC", first)
    first = re.sub(r"[%@][\w.]+", "NAME", first)
    first = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", first)
    return f"{status}: {first[:160]}"
