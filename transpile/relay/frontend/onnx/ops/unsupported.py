"""ONNX operators Relay cannot express, each rejected with its reason (random draws, strings, codecs, Unique).

They are converters rather than absences so that an import lists them with the reason instead
of as operators nobody wrote a conversion for. Unique is computed at import when its input is a
constant; only a run-time input is rejected.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter
from .shape_values import normalize_axis

_RANDOM = (
    "non-deterministic: it draws random numbers at run time, and Relay has no random-number generator "
    "(a sample drawn at import would be one fixed value)"
)
_STRINGS = "Relay has no string tensors"
DATA_DEPENDENT = (
    "data-dependent output shape: the output's size depends on the input's values, which Relay's static-shape "
    "backends cannot express (it is computed at import when the input is a constant)"
)


def _reject(reason: str):
    """A converter that always refuses; the importer lists its nodes with `reason` before converting any."""

    def convert(ctx):
        raise ctx.unsupported(reason)

    convert.rejection = reason
    return convert


for _op in ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"):
    converter(_op)(_reject(_RANDOM))

for _op in ("StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch"):
    converter(_op)(_reject(_STRINGS))

converter("ImageDecoder")(
    _reject(
        "Relay has no image codecs or byte strings: the operator decodes compressed images (JPEG, PNG, ...) at run time"
    )
)


@converter("Unique")
def unique(ctx):
    b = ctx.b
    x = ctx.input(0)
    value = b.value_of(x)
    if value is None:
        raise ctx.unsupported(DATA_DEPENDENT)
    value = np.asarray(value)
    axis = ctx.attr("axis")
    if axis is not None:
        axis = normalize_axis(ctx, axis, value.ndim)
    return [b.const(r) for r in unique_values(value, axis, bool(ctx.attr("sorted", 1)))]


def unique_values(x: np.ndarray, axis: int | None, sort: bool):
    """ONNX Unique's four outputs (Y, indices, inverse_indices, counts; int64) for a numpy array."""
    flat = x.reshape(-1) if axis is None else np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
    if axis is None:
        _, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True, return_counts=True)
    else:
        _, first, inverse, counts = np.unique(flat, axis=0, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if not sort:  # in order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    y = np.take(x.reshape(-1) if axis is None else x, first, axis=0 if axis is None else axis)
    return y, first.astype("int64"), inverse.astype("int64"), counts.astype("int64")
