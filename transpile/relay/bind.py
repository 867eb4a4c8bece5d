"""Binding values to variables: TVM's `relay.bind` and `bind_params_by_name`, plus the module form.

TVM's semantics (src/relay/backend/utils.cc BindParamsByName, src/relay/ir/expr_functor.cc Bind):
names that match no parameter are ignored; a name shared by several parameters is an error when a
value is given for it; bound parameters leave the function's parameter list. Beyond TVM, a value is
checked against the parameter's declared type here, so a wrong weight fails with the parameter's
name instead of as a type error somewhere inside the model.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from ..errors import TranspileError
from .analysis import free_vars
from .deep import run_deep
from .expr import Constant, Expr, Function, Var
from .ty import TensorType
from .visitor import ExprMutator

__all__ = ["ParamsBindingError", "bind", "bind_params_by_name", "bind_params_in_module"]


class ParamsBindingError(TranspileError):
    """A parameter value that does not fit the function parameter it is bound to."""


class _Substitute(ExprMutator):
    """Rebuilds an expression with some variables replaced (sharing everything unchanged)."""

    def __init__(self, binds: Mapping[Var, Expr]):
        super().__init__()
        self.binds = binds

    def visit_var(self, v):
        return self.binds.get(v, v)


def _bind(expr: Expr, binds: Mapping[Var, Expr]) -> Expr:
    body_or_expr = expr.body if isinstance(expr, Function) else expr
    new = _Substitute(binds).visit(body_or_expr)
    if not isinstance(expr, Function):
        return new
    params = [p for p in expr.params if p not in binds]
    if new is expr.body and len(params) == len(expr.params):
        return expr
    if all(isinstance(value, Constant) for value in binds.values()):
        return Function(params, new, expr.ret_type, expr.type_params, expr.attrs, expr.span)
    # As TVM: variables the bound values bring in become parameters of the function.
    before = set(free_vars(expr))
    candidate = Function(params, new, expr.ret_type, expr.type_params, expr.attrs, expr.span)
    params += [v for v in free_vars(candidate) if v not in before and v not in params]
    return Function(params, new, expr.ret_type, expr.type_params, expr.attrs, expr.span)


def bind(expr: Expr, binds: Mapping[Var, Expr]) -> Expr:
    """TVM's relay.bind: replace variables by expressions; a Function loses the parameters bound."""
    binds = {var: value if isinstance(value, Expr) else Constant(value) for var, value in binds.items()}
    return run_deep(_bind, expr, binds)


def _lossless(array: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """`array` (from Python numbers or lists) converted to `dtype`, or None if that changes a value."""
    if dtype.kind == "b":
        return array if array.dtype.kind == "b" else None
    with np.errstate(over="ignore", invalid="ignore"):
        converted = array.astype(dtype)
    if dtype.kind in "iu":
        return converted if np.array_equal(converted.astype(array.dtype), array) else None
    # Floats: rounding to the nearest value is inherent, overflowing to infinity is a loss.
    return converted if np.array_equal(np.isfinite(converted), np.isfinite(array)) else None


def _value_for(param: Var, value, where: str) -> Constant:
    """The constant for `param`, after checking `value` against the parameter's declared type."""
    from ..runtime.boundary import shape_fits
    from .params import tensor_value
    from .printer import type_to_text

    declared = param.type_annotation
    what = f"the value for parameter %{param.name_hint} of {where}"
    if isinstance(value, Constant):
        array = value.data
    else:
        try:
            array = tensor_value(value, what)
        except TranspileError as exc:
            raise ParamsBindingError(exc.message) from None
    if declared is not None and not isinstance(declared, TensorType):
        raise ParamsBindingError(
            f"cannot bind an array to parameter %{param.name_hint} of {where}: its type "
            f"{type_to_text(declared)} is not a tensor type"
        )
    if declared is not None and array.dtype != np.dtype(declared.dtype):
        # Only values without a dtype of their own (Python numbers, lists) are converted.
        has_own_dtype = isinstance(value, (np.ndarray, np.generic, Constant)) or hasattr(value, "__dlpack__")
        converted = None if has_own_dtype else _lossless(array, np.dtype(declared.dtype))
        if converted is None:
            raise ParamsBindingError(
                f"{what} has dtype {array.dtype.name}, but the parameter is declared {type_to_text(declared)}"
            )
        array = converted
    if declared is not None and not shape_fits(array.shape, declared.shape):
        raise ParamsBindingError(
            f"{what} has shape {tuple(array.shape)}, but the parameter is declared {type_to_text(declared)}"
        )
    if isinstance(value, Constant) and value.data is array:
        return value
    return Constant(array)


def _bindings(func: Function, params: Mapping, where: str) -> tuple[dict, list[str]]:
    """({param Var: Constant}, names matching no parameter) for `params` on `func`."""
    if not isinstance(func, Function):
        raise TypeError(f"bind_params_by_name needs a relay.Function, got {type(func).__name__}")
    if not hasattr(params, "items"):
        raise TypeError(f"params must be a dict of name -> array, got {type(params).__name__}")
    by_name: dict[str, list[Var]] = {}
    for p in func.params:
        by_name.setdefault(p.name_hint, []).append(p)
    binds, unknown = {}, []
    for name, value in params.items():
        matching = by_name.get(name)
        if not matching:
            unknown.append(name)
            continue
        if len(matching) > 1:
            raise ParamsBindingError(
                f"cannot bind params[{name!r}]: {len(matching)} parameters of {where} are named %{name}"
            )
        binds[matching[0]] = _value_for(matching[0], value, where)
    return binds, unknown


def bind_params_by_name(func: Function, params: Mapping) -> Function:
    """TVM's bind_params_by_name: `func` with the parameters named in `params` replaced by constants.

    Values are numpy arrays or anything np.asarray accepts (DLPack tensors too). Names that match no
    parameter are ignored, as in TVM.
    """
    binds, _unknown = _bindings(func, params, "the function")
    return bind(func, binds) if binds else func


def bind_params_in_module(mod, params: Mapping, entry: str = "main"):
    """A copy of `mod` whose `entry` has the parameters named in `params` bound to constants.

    Names that match no parameter are ignored as TVM did, with a warning naming them (a misspelt
    weight would otherwise only show up as a missing argument at call time).
    """
    func = mod[entry]
    binds, unknown = _bindings(func, params, f"@{entry}")
    if unknown:
        names = ", ".join(repr(n) for n in unknown[:8]) + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
        own = ", ".join(f"%{p.name_hint}" for p in func.params) or "none"
        warnings.warn(
            f"params {names} match no parameter of @{entry} and are ignored (its parameters: {own})",
            UserWarning,
            stacklevel=2,
        )
    if not binds:
        return mod
    bound = mod.copy()
    bound[entry] = bind(func, binds)
    return bound
