"""Public entry points of type inference: whole modules and standalone expressions."""

from __future__ import annotations

from ..deep import deep_recursion
from ..expr import Expr, Function
from ..module import IRModule
from ..ty import FuncType
from .annotate import annotate_parameters
from .infer import TypeInferencer

__all__ = ["infer_type", "infer_type_expr"]


@deep_recursion
def infer_type(mod_or_expr, mod: IRModule | None = None):
    """Type-check a module (returns a copy whose functions carry types) or an expression."""
    if isinstance(mod_or_expr, IRModule):
        return _infer_module(mod_or_expr)
    if isinstance(mod_or_expr, Expr):
        return _infer_expr(mod_or_expr, mod)
    raise TypeError(f"infer_type expects an IRModule or a relay expression, got {type(mod_or_expr).__name__}")


@deep_recursion
def infer_type_expr(expr: Expr, mod: IRModule | None = None) -> Expr:
    """Type-check a standalone expression (globals and constructors come from `mod`)."""
    return _infer_expr(expr, mod)


def _infer_module(mod: IRModule) -> IRModule:
    if not _check_module(mod).unannotated_params:
        return mod.copy()
    # As TVM's InferType: the result's parameters carry their inferred types (on new nodes).
    annotated = mod.copy()
    for gv, func in mod.functions.items():
        annotated.functions[gv] = annotate_parameters(func)
    _check_module(annotated)
    return annotated


def _check_module(mod: IRModule) -> TypeInferencer:
    """Types every function of `mod` in place."""
    inferencer = TypeInferencer(mod)
    functions = list(mod.functions.items())
    # Every global gets its type first (annotations, unknowns as holes), so bodies may refer to
    # any global, including themselves and later ones.
    for gv, func in functions:
        inferencer.globals[gv.name_hint] = inferencer.signature(func)
    for gv, func in functions:
        inferencer.fn_names[id(func)] = f"@{gv.name_hint}"
        inferencer.infer(func)
        inferencer.solve_pending()
    inferencer.finish()
    for gv, func in functions:
        gv._set_checked_type(func.checked_type)
    return inferencer


def _infer_expr(expr: Expr, mod: IRModule | None) -> Expr:
    inferencer = TypeInferencer(mod)
    unchecked = []
    for gv, func in (mod.functions.items() if mod is not None else ()):
        known = getattr(func, "checked_type_", None)
        if isinstance(known, FuncType) and inferencer.solver.is_complete(known):
            inferencer.globals[gv.name_hint] = known  # typed by an earlier run: reuse
        else:
            inferencer.globals[gv.name_hint] = inferencer.signature(func)
            unchecked.append((gv, func))
    for gv, func in unchecked:
        inferencer.fn_names[id(func)] = f"@{gv.name_hint}"
        inferencer.infer(func)
    if isinstance(expr, Function):
        inferencer.fn_names.setdefault(id(expr), "")
    inferencer.infer(expr)
    inferencer.finish()
    return expr
