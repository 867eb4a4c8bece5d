"""Values of higher-order reverse-mode AD: tensors paired with a gradient reference, and the let lists that build them.

In the differentiated program every tensor of type T is a pair `(value: T, grad: ref T)`; tuples,
references, ADTs and functions keep their shape with their contents translated, and every function
takes one more parameter, the backpropagator `bp: ref (fn () -> ())` (see higher_order.py).
"""

from __future__ import annotations

from ... import expr as E
from ...op.gradients import GradientError
from ...op.registry import make_call
from ...ty import FuncType, IncompleteType, RefType, TensorType, TupleType, TypeCall

__all__ = [
    "BACKPROP_TYPE",
    "UNIT_TYPE",
    "LetList",
    "reverse_type",
    "differentiable",
    "has_differentiable_leaf",
    "lift",
    "value_of",
    "grad_of",
    "accumulate",
]

UNIT_TYPE = TupleType([])
BACKPROP_TYPE = RefType(FuncType([], UNIT_TYPE))


def reverse_type(ty, where: str = "a value"):
    """The type a value of type `ty` has in the differentiated program."""
    kind = type(ty)
    if kind is TensorType:
        return TupleType([ty, RefType(ty)])
    if kind is TupleType:
        return TupleType([reverse_type(f, where) for f in ty.fields])
    if kind is FuncType:
        args = [reverse_type(a, where) for a in ty.arg_types]
        return FuncType(args + [BACKPROP_TYPE], reverse_type(ty.ret_type, where), ty.type_params, ty.type_constraints)
    if kind is RefType:
        return RefType(reverse_type(ty.value, where))
    if kind is TypeCall:
        return TypeCall(ty.func, [reverse_type(a, where) for a in ty.args])
    if ty is None or kind is IncompleteType:
        raise GradientError(f"higher-order AD: {where} has no inferred type")
    return ty  # type variables and ADT names stand for themselves


def differentiable(ty) -> bool:
    return isinstance(ty, TensorType) and (ty.dtype.startswith("float") or ty.dtype.startswith("bfloat"))


def has_differentiable_leaf(ty) -> bool:
    if isinstance(ty, TupleType):
        return any(has_differentiable_leaf(f) for f in ty.fields)
    return differentiable(ty)


class LetList:
    """A let chain under construction: `push` binds a value to a fresh variable, `wrap` closes the chain."""

    def __init__(self):
        self.bindings: list[tuple[E.Var, E.Expr]] = []

    def push(self, value: E.Expr, ty=None, name: str = "t") -> E.Expr:
        """A variable bound to `value` (variables and globals are returned as they are)."""
        if isinstance(value, (E.Var, E.GlobalVar)):
            return value
        var = E.Var(name, ty)
        if ty is not None:
            var._set_checked_type(ty)
        self.bindings.append((var, value))
        return var

    def bind(self, var: E.Var, value: E.Expr) -> None:
        self.bindings.append((var, value))

    def wrap(self, body: E.Expr) -> E.Expr:
        for var, value in reversed(self.bindings):
            body = E.Let(var, value, body)
        return body


def _field(atom: E.Expr, index: int, ty, ll: LetList, name: str) -> E.Expr:
    if isinstance(atom, E.Tuple):
        return atom.fields[index]
    return ll.push(E.TupleGetItem(atom, index), ty, name)


def _unsupported(ty, what: str):
    return GradientError(f"higher-order AD: {what} of type {ty} (only tensors and tuples of them)")


def lift(value: E.Expr, ty, ll: LetList, name: str = "ad") -> E.Expr:
    """A forward value of type `ty` (tensors, tuples) as an AD value with zero gradients."""
    if isinstance(ty, TensorType):
        zeros = E.RefCreate(make_call("zeros_like", [value]))
        return ll.push(E.Tuple([value, zeros]), reverse_type(ty), name)
    if isinstance(ty, TupleType):
        fields = [lift(_field(value, i, f, ll, "field"), f, ll, name) for i, f in enumerate(ty.fields)]
        return ll.push(E.Tuple(fields), reverse_type(ty), name)
    raise _unsupported(ty, "a parameter or operator result")


def value_of(ad: E.Expr, ty, ll: LetList, name: str = "v") -> E.Expr:
    """The forward value of an AD value, typed (operator gradient rules read their arguments' types)."""
    if isinstance(ty, TensorType):
        return ll.push(E.TupleGetItem(ad, 0), ty, name)
    if isinstance(ty, TupleType):
        fields = [value_of(_field(ad, i, reverse_type(f), ll, "field"), f, ll, name) for i, f in enumerate(ty.fields)]
        return ll.push(E.Tuple(fields), ty, name)
    raise _unsupported(ty, "an operator argument or result")


def grad_of(ad: E.Expr, ty, ll: LetList, name: str = "g") -> E.Expr:
    """The gradient accumulated so far in an AD value: a typed variable, or a typed Tuple of them."""
    if isinstance(ty, TensorType):
        return ll.push(E.RefRead(E.TupleGetItem(ad, 1)), ty, name)
    if isinstance(ty, TupleType):
        fields = [grad_of(_field(ad, i, reverse_type(f), ll, "field"), f, ll, name) for i, f in enumerate(ty.fields)]
        grads = E.Tuple(fields)
        grads._set_checked_type(ty)
        return grads
    raise _unsupported(ty, "a gradient")


def accumulate(ad: E.Expr, ty, grad: E.Expr | None, ll: LetList) -> None:
    """Add `grad` (None: zero) to the gradient reference(s) of AD value `ad`; integer tensors take none."""
    if grad is None or not has_differentiable_leaf(ty):
        return
    if isinstance(ty, TensorType):
        ref = ll.push(E.TupleGetItem(ad, 1), RefType(ty), "ref")
        ll.push(E.RefWrite(ref, make_call("add", [E.RefRead(ref), grad])), UNIT_TYPE, "_")
        return
    if isinstance(ty, TupleType):
        if not isinstance(grad, E.Tuple):
            grad = ll.push(grad, ty, "g")
        for i, field_type in enumerate(ty.fields):
            field_grad = grad.fields[i] if isinstance(grad, E.Tuple) else E.TupleGetItem(grad, i)
            accumulate(_field(ad, i, reverse_type(field_type), ll, "field"), field_type, field_grad, ll)
        return
    raise _unsupported(ty, "a gradient")
