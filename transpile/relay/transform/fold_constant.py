"""FoldConstant: evaluate operator calls whose arguments are all constants at compile time (TVM's fold_constant.cc).

Rules, as TVM's ConstantFolder:
- an operator call whose arguments are constants (or tuples of constants) becomes the constant it
  evaluates to, computed by the registry's numpy implementation and cast to the call's exact type;
- `shape_of` / `ndarray_size` of a statically shaped tensor become constants, whatever the tensor;
- a let binding of a constant is inlined and dropped; `(a, b, ...).i` becomes the field when the
  other fields are pure; `if` on a constant condition becomes the branch taken;
- never folded: calls of closures, globals and constructors, references (effects), stateful
  operators, calls with no arguments (`zeros`, `ones`) and fills (`full`, `zeros_like`, ...): a
  constant would only take memory (TVM's skip list), fused kernels, and calls whose result is
  larger than their inputs and than SMALL_RESULT (a broadcast or `tile` blowing a few numbers up);
- a call whose evaluation fails is left for run time, which reports the error where it belongs.
"""

from __future__ import annotations

import numpy as np

from .. import expr as E
from ..op.registry import lookup, normalize_attrs
from ..ty import AnyDim, TensorType, TupleType
from .effects import PurityAnalysis, is_stateful_op
from .infra import FunctionPass
from .patterns import is_constant_tree, op_name, type_of
from .rewriter import Rewriter

__all__ = ["FoldConstant", "fold_constant", "FoldConstantExpr", "evaluate_constant_call", "SMALL_RESULT"]

# A folded result may always hold this many elements, however small its inputs.
SMALL_RESULT = 1024

# Operators that only make a tensor of a given shape from a fill value: folding gains nothing and
# stores the whole tensor (TVM's FoldConstant skip list).
FILL_OPS = frozenset({"full", "full_like", "zeros_like", "ones_like"})


def _value(expr):
    """The numpy value of a constant tree (Constant -> array, Tuple -> tuple)."""
    if type(expr) is E.Constant:
        return expr.data
    return tuple(_value(f) for f in expr.fields)


def _size(value) -> int:
    if isinstance(value, tuple):
        return sum(_size(v) for v in value)
    return int(np.size(value))


def _type_size(ty) -> int | None:
    if isinstance(ty, TensorType):
        if any(isinstance(d, AnyDim) for d in ty.shape):
            return None
        return int(np.prod(ty.shape, dtype=np.int64))
    if isinstance(ty, TupleType):
        sizes = [_type_size(f) for f in ty.fields]
        return None if any(s is None for s in sizes) else sum(sizes)
    return None


def _as_constant(result, ty):
    """The Constant (or tuple of Constants) of `result` with exactly type `ty`, or None if it does not fit."""
    if isinstance(ty, TupleType):
        if not isinstance(result, (tuple, list)) or len(result) != len(ty.fields):
            return None
        fields = [_as_constant(r, t) for r, t in zip(result, ty.fields)]
        return None if any(f is None for f in fields) else E.Tuple(fields)
    if not isinstance(ty, TensorType):
        return None
    array = np.asarray(result)
    if array.dtype != np.dtype(ty.dtype):
        array = array.astype(ty.dtype)
    if array.ndim != ty.ndim or any(
        not isinstance(want, AnyDim) and got != want for got, want in zip(array.shape, ty.shape)
    ):
        return None
    return E.Constant(array)


def evaluate_constant_call(call: E.Call, out_type=None):
    """The constant an operator call over constant arguments evaluates to, or None when it must not be folded."""
    opdef = lookup(call.op.name)
    out_type = out_type if out_type is not None else type_of(call)
    if opdef is None or out_type is None:
        return None
    args = [_value(a) for a in call.args]
    out_size = _type_size(out_type)
    if out_size is None or out_size > max(SMALL_RESULT, sum(_size(a) for a in args)):
        return None
    try:
        attrs = call.attrs if call.attrs is not None else normalize_attrs(opdef, {})
        with np.errstate(all="ignore"):
            result = opdef.numpy_impl(args, attrs, out_type)
    except Exception:  # evaluation errors belong to run time
        return None
    return _as_constant(result, out_type)


def _static_shape_constant(call: E.Call, original: E.Call):
    """`shape_of(x)` / `ndarray_size(x)` of a statically shaped x, as a constant of the call's dtype."""
    data_type = type_of(original.args[0])
    if not isinstance(data_type, TensorType) or data_type.concrete_shape is None:
        return None
    shape = data_type.concrete_shape
    if call.op.name == "shape_of":
        return E.Constant(np.array(shape, dtype=call.attrs.dtype))
    return E.Constant(np.array(int(np.prod(shape, dtype=np.int64)), dtype=call.attrs.dtype))


class _ConstantFolder(Rewriter):
    def __init__(self):
        super().__init__()
        self.pure = PurityAnalysis()

    def visit_let(self, let):
        chain = []
        node = let
        while type(node) is E.Let and id(node) not in self.memo:
            value = self.visit(node.value)
            if type(value) is E.Constant:
                self.memo[id(node.var)] = value  # every use of the variable becomes the constant
                chain.append((node, None, None))
            else:
                chain.append((node, self.visit(node.var), value))
            node = node.body
        body = self.visit(node)
        for original, var, value in reversed(chain):
            if var is None:
                rebuilt = body
            elif var is original.var and value is original.value and body is original.body:
                rebuilt = original
            else:
                rebuilt = E.Let(var, value, body, original.span)
            self.memo[id(original)] = rebuilt
            body = rebuilt
        return body

    def visit_if(self, i):
        new = super().visit_if(i)
        if type(new) is E.If and type(new.cond) is E.Constant and new.cond.data.size == 1:
            return new.true_branch if bool(new.cond.data.reshape(())) else new.false_branch
        return new

    def rewrite_call(self, original, new):
        name = op_name(new)
        if name is None or not new.args or is_stateful_op(name) or name in FILL_OPS:
            return new
        if name in ("shape_of", "ndarray_size"):
            return _static_shape_constant(new, original) or new
        if not all(is_constant_tree(a) for a in new.args):
            return new
        return evaluate_constant_call(new) or new

    def rewrite_tuple_get_item(self, original, new):
        if type(new) is not E.TupleGetItem or type(new.tuple_value) is not E.Tuple:
            return new
        fields = new.tuple_value.fields
        others = fields[: new.index] + fields[new.index + 1 :]
        return fields[new.index] if all(self.pure(f) for f in others) else new


def fold_constant(func, mod=None, ctx=None):
    """`func` with its constant subexpressions evaluated."""
    return _ConstantFolder().visit(func)


def FoldConstantExpr(expr, mod=None, fold_qnn: bool = False):
    """Fold the constants of one expression (tvm.relay.transform.FoldConstantExpr)."""
    from ..deep import run_deep

    return run_deep(fold_constant, expr)


def FoldConstant(fold_qnn: bool = False):
    """TVM's FoldConstant pass (opt_level 2)."""
    return FunctionPass(fold_constant, 2, "FoldConstant")
