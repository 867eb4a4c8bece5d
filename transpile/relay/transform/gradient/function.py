"""`relay.transform.gradient` and the FirstOrderGradient module pass: a function paired with its gradient.

TVM's contract: for `fn(%x1, ..., %xn) -> T` the result is `fn(%x1, ..., %xn) -> (T, (T1, ..., Tn))`
computing the original result and its gradient with respect to every parameter, seeded with ones.
Higher-order mode (the default, as in TVM; higher_order.py) differentiates any program: control
flow, closures, references, ADTs, calls of globals (recursion); a tuple result seeds its first
tensor. First-order mode handles dataflow functions and seeds every output (the gradient of the
sum of all the result's elements): let bindings are inlined into the graph (their values stay shared).
"""

from __future__ import annotations

from ... import expr as E
from ...module import IRModule
from ...op.gradients import GradientError
from ...ty import TupleType
from ..infra import ModulePass
from .graph import inline_lets
from .higher_order import higher_order_gradient
from .reverse import first_order_gradient

__all__ = ["gradient", "FirstOrderGradient"]

MODES = ("first_order", "higher_order")


def gradient(expr, mod: IRModule | None = None, mode: str = "higher_order") -> E.Function:
    """A Function with `expr`'s parameters returning `(result, (d result / d param, ...))`.

    expr: a Function, or a GlobalVar of `mod`. mod: the module the function's globals and types
    come from (optional; higher-order mode adds the differentiated globals @f_grad to it).
    mode: "higher_order" (any program) or "first_order" (dataflow functions).
    """
    if mode not in MODES:
        raise GradientError(f"relay.transform.gradient: unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    func = _resolve(expr, mod)
    if mode == "higher_order":
        return higher_order_gradient(func, mod)
    return _first_order(func, mod)


def _resolve(expr, mod) -> E.Function:
    if isinstance(expr, E.GlobalVar):
        if mod is None or expr.name_hint not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise GradientError(f"relay.transform.gradient: @{expr.name_hint} is not a function of the given module")
        expr = mod[expr]
    if not isinstance(expr, E.Function):
        raise GradientError(f"relay.transform.gradient expects a Function or a GlobalVar, got {type(expr).__name__}")
    return expr


def _first_order(func: E.Function, mod: IRModule | None) -> E.Function:
    from ...typing import infer_type_expr

    if func.type_params:
        raise GradientError("first-order AD does not support polymorphic functions (type parameters)", func.span)
    if func.attrs and func.attrs.get("Primitive", 0):
        raise GradientError("first-order AD does not differentiate fused (Primitive) functions", func.span)
    forward = E.Function(func.params, inline_lets(func.body), func.ret_type, (), func.attrs, func.span)
    infer_type_expr(forward, mod)
    grads = first_order_gradient(forward.body, list(forward.params))
    ret_type = None
    if func.ret_type is not None and all(p.type_annotation is not None for p in func.params):
        ret_type = TupleType([func.ret_type, TupleType([p.type_annotation for p in func.params])])
    result = E.Function(func.params, E.Tuple([forward.body, E.Tuple(grads)]), ret_type, (), func.attrs, func.span)
    infer_type_expr(result, mod)
    return result


def FirstOrderGradient() -> ModulePass:
    """Replace every function of the module by its first-order gradient function (TVM's pass of that name)."""

    def transform(mod: IRModule) -> IRModule:
        out = mod.copy()
        for gv, func in list(mod.functions.items()):
            out.add(gv, gradient(func, mod, mode="first_order"), update=True)
        return out

    return ModulePass(transform, 0, "FirstOrderGradient")
