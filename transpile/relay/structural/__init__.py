"""Structural equality and hashing of Relay IR, up to renaming of bound variables.

Bound variables (function parameters, let variables, pattern variables) and bound type
variables (type parameters of functions, function types and type definitions) are equal when
they are bound at corresponding places; free variables only when identical (or, with
`map_free_vars`, when they correspond consistently). Name hints and spans never matter.
Constants compare by dtype, shape and bytes (so NaN equals NaN). Sharing does not matter: a DAG
equals its unfolded tree. A zero-arity constructor written bare equals its call with no
arguments, and an ADT applied to no type arguments equals the ADT itself, since the text format
cannot tell them apart.
"""

from __future__ import annotations

from ..deep import run_deep
from ..module import IRModule
from ..printer import astext_node
from .equal import compare
from .hashing import hash_of

__all__ = ["structural_equal", "structural_hash", "assert_structural_equal"]


def structural_equal(a, b, map_free_vars: bool = False) -> bool:
    """True when `a` and `b` are equal up to renaming of bound (type) variables."""
    return run_deep(compare, a, b, map_free_vars) is None


def assert_structural_equal(a, b, map_free_vars: bool = False) -> None:
    """Raise AssertionError naming the first differing path and showing both sides."""
    mismatch = run_deep(compare, a, b, map_free_vars)
    if mismatch is None:
        return

    def show(x, limit: int = 2000) -> str:
        try:
            text = astext_node(x) if hasattr(x, "span") or isinstance(x, IRModule) else repr(x)
        except Exception:  # a message must never fail to build
            text = repr(x)
        return text if len(text) <= limit else text[:limit] + " ..."

    raise AssertionError(
        f"structural mismatch at {mismatch.path}: {mismatch.reason}\n"
        f"  lhs: {show(mismatch.lhs)}\n"
        f"  rhs: {show(mismatch.rhs)}"
    )


def structural_hash(x, map_free_vars: bool = False) -> int:
    """A hash consistent with structural_equal (alpha-invariant, ignores names and spans)."""
    return run_deep(hash_of, x, map_free_vars)
