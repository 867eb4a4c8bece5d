"""Numeric literal decoding: suffixes (`2i64`, `1e-05f16`), default dtypes and range checks."""

from __future__ import annotations

import math
import re

import numpy as np

__all__ = ["decode_number", "LiteralError", "literal_constant_array"]

# A literal's body and its optional suffix: `i`/`i8`..`i64` or `f`/`f16`/`f32`/`f64`.
_NUMBER = re.compile(r"(?P<body>(?:\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|inf|nan)(?:(?P<suffix>[fi])(?P<width>\d*))?\Z")

_INT_WIDTHS = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}
_FLOAT_WIDTHS = {16: "float16", 32: "float32", 64: "float64"}


class LiteralError(ValueError):
    """A malformed or out-of-range literal; the lexer turns it into a located ParseError."""


def _int_range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def decode_number(text: str, negative: bool) -> tuple[str, object, str]:
    """Decode a literal's text (sign removed) into (kind, Python value, dtype).

    kind is "int" or "float". Unsuffixed integers are int32, promoted to int64 when they do not
    fit (as TVM's tokenizer did); unsuffixed floats are float32. A literal outside the range of
    an explicitly requested dtype is an error.
    """
    match = _NUMBER.match(text)
    if match is None:
        raise LiteralError(f"invalid numeric literal {text}")
    body, suffix, width_text = match.group("body"), match.group("suffix"), match.group("width")
    sign = "-" if negative else ""
    is_float_body = body in ("inf", "nan") or any(c in body for c in ".eE")
    if suffix == "i" or (suffix is None and not is_float_body):
        if is_float_body:
            raise LiteralError(f"invalid integer literal {sign}{text}: an `i` suffix needs a whole number")
        value = int(body)
        value = -value if negative else value
        if suffix is None:
            for dtype in ("int32", "int64"):
                low, high = _int_range(dtype)
                if low <= value <= high:
                    return "int", value, dtype
            raise LiteralError(f"int literal {value} out of range for int64")
        width = int(width_text) if width_text else 32
        dtype = _INT_WIDTHS.get(width)
        if dtype is None:
            raise LiteralError(f"invalid integer width {width} in literal {sign}{text} (expected 8, 16, 32 or 64)")
        low, high = _int_range(dtype)
        if not low <= value <= high:
            raise LiteralError(f"int literal {value} out of range for {dtype}")
        return "int", value, dtype
    if body in ("inf", "nan") and suffix is None:
        raise LiteralError(f"invalid numeric literal {text}")
    width = int(width_text) if width_text else 32
    dtype = _FLOAT_WIDTHS.get(width)
    if dtype is None:
        raise LiteralError(f"invalid float width {width} in literal {sign}{text} (expected 16, 32 or 64)")
    value = float(body)
    value = -value if negative else value
    if math.isfinite(value):
        limit = float(np.finfo(dtype).max)
        if abs(value) > limit:
            raise LiteralError(f"float literal {sign}{body} out of range for {dtype}")
    elif body not in ("inf", "nan"):
        raise LiteralError(f"float literal {sign}{body} out of range for {dtype}")
    return "float", value, dtype


def literal_constant_array(value, dtype: str) -> np.ndarray:
    """The 0-d array a scalar literal denotes."""
    return np.array(value, dtype=dtype)
