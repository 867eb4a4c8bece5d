"""Text of leaf values: scalar literals, attribute values, strings, and the metadata table."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..attrs import MetaRef, freeze_attr_value
from ..ty import AnyDim

__all__ = [
    "scalar_literal",
    "float_text",
    "string_literal",
    "MetaTable",
    "attr_value_text",
    "same_attr_value",
    "printed_defaults",
]

# Scalars TVM's printer wrote as literals (support::IsSimpleScalar); others go to the meta table.
_INT_SUFFIX = {"int16": "i16", "int32": "", "int64": "i64"}
_FLOAT_SUFFIX = {"float16": "f16", "float32": "f", "float64": "f64"}


def float_text(value, dtype: str = "float64") -> str | None:
    """Shortest text that reads back to exactly `value` in `dtype`; None for inf/nan."""
    value = float(value)
    if not math.isfinite(value):
        return None
    if dtype == "float16":
        text = str(np.float16(value))
    elif dtype == "float32":
        text = str(np.float32(value))
    else:
        text = repr(value)
    # TVM's printer (C++ ostream) wrote whole floats without a fraction: `1f`, `-2f16`.
    if text.endswith(".0"):
        text = text[:-2]
    return text


def scalar_literal(data: np.ndarray) -> str | None:
    """The literal of a 0-d constant (`1f`, `2i64`, `True`), or None if it needs the meta table."""
    if data.shape != ():
        return None
    dtype = data.dtype.name
    value = data.item()
    if dtype == "bool":
        return "True" if value else "False"
    if dtype in _INT_SUFFIX:
        return f"{int(value)}{_INT_SUFFIX[dtype]}"
    if dtype in _FLOAT_SUFFIX:
        text = float_text(value, dtype)
        return None if text is None else text + _FLOAT_SUFFIX[dtype]
    return None


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def string_literal(value: str) -> str:
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'


class MetaTable:
    """Objects printed as `meta[Kind][i]`: constants (with data) and opaque MetaRefs."""

    def __init__(self):
        self.constants: list = []
        self._constant_index: dict[int, int] = {}
        self.ref_sizes: dict[str, int] = {}

    def constant_ref(self, constant) -> str:
        index = self._constant_index.get(id(constant))
        if index is None:
            index = self._constant_index[id(constant)] = len(self.constants)
            self.constants.append(constant)
        return f"meta[relay.Constant][{index}]"

    def meta_ref(self, ref: MetaRef) -> str:
        self.ref_sizes[ref.kind] = max(self.ref_sizes.get(ref.kind, 0), ref.index + 1)
        return f"meta[{ref.kind}][{ref.index}]"

    def __bool__(self) -> bool:
        return bool(self.constants or self.ref_sizes)

    def section_parts(self) -> list[str]:
        """The JSON after `#[metadata]`, in TVM's SaveJSON format, as pieces to join once."""
        from .metadata import metadata_section_parts

        return metadata_section_parts(self.constants, self.ref_sizes)

    def section(self) -> str:
        return "".join(self.section_parts())


def attr_value_text(value, meta: MetaTable, expr_text=None) -> str:
    """An attribute value as TVM printed it: 1, 1e-05f, "s", True, None, [1, 2], meta[K][i]."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = float_text(value)
        return (text if text is not None else repr(value)) + "f"
    if isinstance(value, str):
        return string_literal(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(attr_value_text(v, meta, expr_text) for v in value) + "]"
    if isinstance(value, MetaRef):
        return meta.meta_ref(value)
    if isinstance(value, AnyDim):
        return "?"
    if isinstance(value, Mapping):  # TVM's non-meta form of maps and nested attrs
        inner = ", ".join(f"{k}={attr_value_text(v, meta, expr_text)}" for k, v in value.items())
        return "{" + inner + "}"
    if expr_text is not None:
        return expr_text(value)
    return str(value)


def same_attr_value(a, b) -> bool:
    """Equality that keeps True, 1 and 1.0 apart (an attribute set to 1 differs from default True)."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_attr_value(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    return a == b


_default_cache: dict[str, dict] = {}


def printed_defaults(op_name: str) -> dict:
    """A registered operator's attribute defaults, normalized as the parser fills them ({} if unknown).

    The printer leaves out attributes equal to these (as TVM's printer did) and structural
    equality treats a missing attribute as its default.
    """
    cached = _default_cache.get(op_name)
    if cached is not None:
        return cached
    from ..op.registry import REQUIRED, lookup

    opdef = lookup(op_name)
    out = {}
    if opdef is not None:
        for attr_field in opdef.attrs:
            if attr_field.default is REQUIRED:
                continue
            default = attr_field.default
            if attr_field.convert is not None and default is not None:
                try:
                    default = attr_field.convert(default)
                except Exception:  # a default the converter rejects is compared as given
                    pass
            out[attr_field.name] = freeze_attr_value(default)
    _default_cache[op_name] = out
    return out
