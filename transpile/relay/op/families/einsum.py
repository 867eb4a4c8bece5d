"""einsum(tuple_of_tensors, equation): numpy's Einstein summation (TVM's math.cc, lowered by topi.einsum).

The equation is numpy's: letters label axes, `...` stands for the leading axes that carry no
letter (broadcast between operands, right-aligned), and without `->` the output is the
ellipsis followed by the letters used once, in alphabetical order. Labelled axes of size 1
broadcast, as in numpy.
"""

from __future__ import annotations

import string

import numpy as np

from ...ty import AnyDim, TensorType
from ..common import expect_tuple_of_tensors, fmt_type
from ..registry import REQUIRED, AttrField, OpDef, OpPattern, RelationError, register
from .support import as_out, is_any, is_bool, quiet

__all__ = ["einsum_plan"]

_ELLIPSIS = "..."


def _parse_term(term: str, equation: str) -> list:
    """A subscript term as a list of letters with _ELLIPSIS where `...` stands."""
    labels, rest = [], term
    while rest:
        if rest.startswith(_ELLIPSIS):
            if _ELLIPSIS in labels:
                raise RelationError(f"einsum: more than one '...' in term {term!r} of {equation!r}")
            labels.append(_ELLIPSIS)
            rest = rest[3:]
        elif rest[0] in string.ascii_letters:
            labels.append(rest[0])
            rest = rest[1:]
        else:
            raise RelationError(f"einsum: invalid character {rest[0]!r} in equation {equation!r}")
    return labels


def _expand(labels: list, ndim: int, index: int, equation: str) -> list:
    """Labels per axis of operand `index`; ellipsis axes become ("...", distance from the right)."""
    letters = [label for label in labels if label != _ELLIPSIS]
    if _ELLIPSIS not in labels:
        if len(letters) != ndim:
            raise RelationError(
                f"einsum: operand {index} has rank {ndim} but its subscripts {''.join(labels)!r} name "
                f"{len(letters)} axes"
            )
        return letters
    extra = ndim - len(letters)
    if extra < 0:
        raise RelationError(f"einsum: operand {index} has rank {ndim}, fewer than its {len(letters)} subscript letters")
    at = labels.index(_ELLIPSIS)
    return letters[:at] + [(_ELLIPSIS, extra - j) for j in range(extra)] + letters[at:]


def _merge(sizes: list):
    """The broadcast size of one label (1 stretches; Any when unknown)."""
    known = [s for s in sizes if not is_any(s) and s != 1]
    if known:
        return known[0]
    return AnyDim() if any(is_any(s) for s in sizes) else 1


def einsum_plan(equation: str, shapes: list) -> tuple:
    """(per-operand axis labels, output labels, output shape) of an einsum; RelationError if invalid."""
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise RelationError(
            f"einsum: equation {equation!r} has {len(terms)} operand term(s), got {len(shapes)} tensors"
        )
    expanded = [_expand(_parse_term(t, equation), len(s), i, equation) for i, (t, s) in enumerate(zip(terms, shapes))]
    sizes: dict = {}
    for labels, shape in zip(expanded, shapes):
        for label, dim in zip(labels, shape):
            sizes.setdefault(label, []).append(dim)
    for label, dims in sizes.items():
        known = {d for d in dims if not is_any(d) and d != 1}
        if len(known) > 1:
            name = "..." if isinstance(label, tuple) else repr(label)
            listed = ", ".join(str(d) for d in dims)
            raise RelationError(f"einsum: axes labelled {name} have incompatible sizes {listed} in {equation!r}")
    ellipsis_rank = max((label[1] for label in sizes if isinstance(label, tuple)), default=0)
    ellipsis = [(_ELLIPSIS, j) for j in range(ellipsis_rank, 0, -1)]
    if arrow:
        out_terms = _parse_term(rhs, equation)
        letters = [label for label in out_terms if label != _ELLIPSIS]
        for letter in letters:
            if letters.count(letter) > 1:
                raise RelationError(f"einsum: output subscript {letter!r} appears more than once in {equation!r}")
            if letter not in sizes:
                raise RelationError(f"einsum: output subscript {letter!r} names no input axis in {equation!r}")
        if _ELLIPSIS not in out_terms and ellipsis_rank:
            raise RelationError(f"einsum: the inputs' '...' axes need a '...' in the output of {equation!r}")
        at = out_terms.index(_ELLIPSIS) if _ELLIPSIS in out_terms else len(letters)
        output = letters[:at] + ellipsis + letters[at:]
    else:
        counts: dict = {}
        for labels in expanded:
            for label in labels:
                if not isinstance(label, tuple):
                    counts[label] = counts.get(label, 0) + 1
        output = ellipsis + sorted(label for label, n in counts.items() if n == 1)
    return expanded, output, tuple(_merge(sizes[label]) for label in output)


def _einsum_rel(arg_types, attrs):
    if len(arg_types) != 1:
        raise RelationError(f"einsum: expected 1 argument (a tuple of tensors), got {len(arg_types)}")
    fields = expect_tuple_of_tensors(arg_types[0], "einsum")
    if not fields:
        raise RelationError("einsum: expects a non-empty tuple of tensors")
    dtype = fields[0].dtype
    for f in fields[1:]:
        if f.dtype != dtype:
            raise RelationError(
                f"einsum: all tensors must have the same dtype, got {fmt_type(fields[0])} and {fmt_type(f)}"
            )
    if is_bool(dtype):
        raise RelationError(f"einsum: needs numeric tensors, got {fmt_type(fields[0])}")
    _, _, shape = einsum_plan(attrs.equation, [f.shape for f in fields])
    return TensorType(shape, dtype)


def _einsum_impl(args, attrs, out_type):
    with quiet():
        return as_out(np.einsum(attrs.equation, *[np.asarray(a) for a in args[0]]), out_type)


def _te_einsum(inputs, attrs, out_type):
    from tvm import topi

    from .te_support import require_equal

    # The relation's promise for `?` dims: a subscript letter has one extent in every operand.
    extents: dict = {}
    inputs_text = attrs.equation.replace(" ", "").split("->")[0]
    for operand, subscripts in zip(inputs[0], inputs_text.split(",")):
        if "." in subscripts:
            continue  # an ellipsis spans a variable number of axes; its relation has no `?` case to keep
        for letter, dim in zip(subscripts, operand.shape):
            extents.setdefault(letter, []).append(dim)
    for letter, dims in extents.items():
        require_equal(dims, f"einsum: subscript {letter} has different extents")
    return topi.einsum(attrs.equation, *inputs[0])


register(
    OpDef(
        "einsum",
        1,
        _einsum_rel,
        OpPattern.INJECTIVE,  # as TVM registered it
        _einsum_impl,
        attrs=(AttrField("equation", REQUIRED, str),),
        tuple_input=True,
        te_impl=_te_einsum,
    )
)
