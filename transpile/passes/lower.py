"""Closure conversion plus lowering of normalized Relay to the LIR (implementation in `lowering/`).

Input contract (what the earlier passes establish): a type-checked module where the functions
reachable from the entry are monomorphic, bodies are let chains over atoms, match clauses are one
constructor level deep (`transpile.match_fail` calls mark unmatched cases), and every operator call
sits in a `Primitive=1` function applied at its let (fusion). The lowering also accepts less
normalized input — nested expressions are bound to temporaries, operator calls outside a fused
group become single-operator kernels — so it can be tested and used before every pass runs.

Output: an `lir.Program`: ADT instances named by their type arguments (`List_int32`,
`Tree_Tensor_2x3_float32`), non-scalar constants hoisted into `c0, c1, ...` (deduplicated by
value), 0-d constants as `Literal`s, one kernel per structurally distinct primitive function
(`fused_dense_bias_add_relu`), lifted closures and wrappers (see `transpile.passes.closure`).
Relay spans are carried to the LIR `Let`s. Tail calls are marked by `transpile.passes.tailcall`.
"""

from __future__ import annotations

from .lowering import LoweringError, lower_module

__all__ = ["lower", "lower_module", "LoweringError"]


def lower(mod, entry: str = "main"):
    """The LIR `Program` of `mod`'s function `entry` and everything it reaches."""
    return lower_module(mod, entry)
