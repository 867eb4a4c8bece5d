"""Operator fusion: group a typed A-normal-form module's primitive operator calls into kernels (Relay's FuseOps).

Output contract (what tail-call marking and the LIR lowering rely on):
- Every primitive operator call of every block (function bodies, `If` branches, `match` clauses,
  local functions) sits in exactly one kernel; no operator call stays outside a kernel.
- A kernel is one binding of the enclosing let chain, placed where the group's last operator was:
  `let %r = (fn (%p0: T0, ..., %pn: Tn, Primitive=1) -> T { body })(a0, ..., an);`
  a `Call` whose callee is a `Function` literal with attrs {"Primitive": 1}; `%r` is the original
  variable of the group's output, so the rest of the program is unchanged.
- Arguments `a_i` are atoms: variables of tensor type or non-scalar `Constant`s, deduplicated, in
  order of first use. Parameters are tensors named p0, p1, ... Tuple-typed operands are passed field
  by field (`let %t_0 = %t.0;` bindings right before the call) and re-tupled inside the body.
- The body is the group's dataflow as nested calls (graph form; a value used twice is one shared
  node) over the parameters and 0-d constants, plus tuples and projections of in-kernel tuples.
- A group has exactly one output (TVM's post-dominator rule: a value used outside the group ends
  the group), which may be a tuple (`split`); projections of a kernel's tuple result, and of any
  tuple made outside the kernel (`batch_norm`, a function parameter), stay `let %x = %t.0;` outside.
- Functions already marked Primitive (modules printed after FuseOps) keep their grouping; a
  let-bound one used only as a callee in its block is put back in callee position and its
  let-chain body back in graph form. External-codegen partitions (attr `Compiler`) are untouched.
- Every new node has `checked_type_`; the module re-type-checks with InferType. The input module
  is not modified; the output is deterministic.

Grouping (partition.py) is TVM's GraphPartitioner on each block's dataflow graph (graph.py): a
block's graph nodes are its operator calls, tuples of tensors and projections, with an edge per use
as an operand inside the same block; any other use of a variable (result, global call, If/Match,
closure, ref, ADT) makes it an external reference, which TVM's post-dominator rule turns into a
group output. Where we differ from TVM: TVM passes a tuple to a kernel that projects it
(`batch_norm` -> `%p0.0 |> relu`); here a projection of a tuple made outside its group is left
outside as a plain binding, so kernels only take tensors. `fuse` expects A-normal form and raises
ValueError on an operator call with a non-atomic operand.
"""

from __future__ import annotations

from .summary import fusion_groups_text, kernels_of
from .rewrite import fuse, is_primitive_function

__all__ = ["fuse", "kernels_of", "fusion_groups_text", "is_primitive_function"]
