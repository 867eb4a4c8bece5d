"""Missing parameter annotations filled in with the inferred types, as TVM's InferType did.

A parameter typed only by inference (`relay.var("w")` given to nn.conv2d with channels and
kernel_size) would lose its type when a pass rewrites the function body so that nothing there
determines it any more (bias_add canonicalized into expand_dims + add). TVM's InferType returned
functions whose parameters carry their checked types; so does the module form here. The
functions are rebuilt with new parameter variables: the caller's nodes are left as they were.
"""

from __future__ import annotations

from .. import expr as E
from ..visitor import ExprMutator

__all__ = ["annotate_parameters"]


class _AnnotateParameters(ExprMutator):
    def __init__(self):
        super().__init__()
        self.renamed: dict[E.Var, E.Var] = {}

    def visit_var(self, v):
        return self.renamed.get(v, v)

    def visit_function(self, f):
        for param in f.params:
            if param.type_annotation is None and param not in self.renamed:
                self.renamed[param] = E.Var(param.name_hint, param.checked_type, span=param.span)
        return super().visit_function(f)


def annotate_parameters(func: E.Function) -> E.Function:
    """`func` (type-checked) with every unannotated parameter, at any depth, annotated with its type."""
    return _AnnotateParameters().visit(func)
