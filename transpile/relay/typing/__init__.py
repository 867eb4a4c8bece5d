"""Relay type inference: unification with incomplete types plus operator type relations."""

from .entry import infer_type, infer_type_expr
from .infer import TypeInferencer
from .subst import free_type_vars, instantiate, substitute
from .unify import Mismatch, Unifier

__all__ = [
    "infer_type",
    "infer_type_expr",
    "TypeInferencer",
    "Unifier",
    "Mismatch",
    "substitute",
    "instantiate",
    "free_type_vars",
]
