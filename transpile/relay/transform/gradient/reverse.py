"""First-order reverse-mode AD over a Relay dataflow DAG (TVM's FirstOrderReverseAD, without the let-list).

One backward sweep over the DAG in reverse topological order: every node is visited once however
many users share it, the gradients arriving from its users are summed first, then its operator's
rule (op/gradients) turns that sum into gradients for its arguments. Tuples carry one gradient
per field; a field nobody differentiated stays "zero" (None) and costs nothing until a value
must be materialized. Integer and boolean tensors take no gradient.
"""

from __future__ import annotations

from ... import expr as E
from ...analysis import free_vars
from ...op.gradients import GradientError
from ...op.registry import make_call
from ...ty import AnyDim, TensorType, TupleType
from ..dag import post_order
from .graph import dataflow_operands
from .typed import annotate_types, type_of

__all__ = ["first_order_gradient"]


def first_order_gradient(outputs_expr: E.Expr, wrt_exprs, seed: E.Expr | None = None) -> list[E.Expr]:
    """d(outputs_expr)/d(each of wrt_exprs), contracted with `seed` (default: ones like the output).

    outputs_expr: a dataflow expression (variables, constants, operator calls, tuples, projections).
    wrt_exprs: nodes of that DAG (usually its free variables); a node the output does not depend
        on gets zeros. Each gradient has its node's type (a tuple of gradients for a tuple).
    seed: the gradient flowing into the output (a vector-Jacobian product); a tensor, or a
        tuple-typed expression for a tuple output.
    Returns typed expressions sharing the forward DAG's nodes.
    """
    wrt = list(wrt_exprs)
    order = _dataflow_order(outputs_expr)
    _ensure_typed(outputs_expr, order)
    grads: dict[int, object] = {}
    out_type = type_of(outputs_expr)
    start = _seed_value(outputs_expr, out_type) if seed is None else _normalize(seed, out_type)
    _accumulate(grads, outputs_expr, start, "the seed")
    for node in reversed(order):
        value = grads.get(id(node))
        if value is None:
            continue
        _propagate(grads, node, value)
    return [annotate_types(_materialize(grads.get(id(x)), x, type_of(x)), "first-order gradient") for x in wrt]


# ---------------------------------------------------------------- the DAG


def _dataflow_order(root) -> list:
    """Every node once, operands before users; anything beyond dataflow is a GradientError naming it."""
    return post_order(root, dataflow_operands)


def _ensure_typed(root, order) -> None:
    if all(type_of(n) is not None for n in order):
        return
    from ...typing import infer_type_expr

    # The graph as a closed function over its free variables, so type inference sees every node.
    infer_type_expr(E.Function(free_vars(root), root))


# ---------------------------------------------------------------- gradient values


def _differentiable(ty) -> bool:
    return isinstance(ty, TensorType) and (ty.dtype.startswith("float") or ty.dtype.startswith("bfloat"))


def _normalize(contribution, ty):
    """A gradient as None (zero), one tensor expression, or a list per tuple field."""
    if contribution is None:
        return None
    if isinstance(ty, TupleType):
        if isinstance(contribution, list):
            fields = contribution
        elif isinstance(contribution, E.Tuple):
            fields = list(contribution.fields)
        else:
            fields = [E.TupleGetItem(contribution, i) for i in range(len(ty.fields))]
        if len(fields) != len(ty.fields):
            raise GradientError(f"a gradient with {len(fields)} fields for a tuple of type {ty}")
        normalized = [_normalize(f, t) for f, t in zip(fields, ty.fields)]
        return normalized if any(f is not None for f in normalized) else None
    return contribution if _differentiable(ty) else None


def _sum(a, b, ty):
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(ty, TupleType):
        return [_sum(x, y, t) for x, y, t in zip(a, b, ty.fields)]
    return annotate_types(make_call("add", [a, b]), "summing gradients")


def _accumulate(grads, node, contribution, source: str) -> None:
    ty = type_of(node)
    value = _normalize(contribution, ty)
    if value is None:
        return
    _check_shape(value, ty, source)
    grads[id(node)] = _sum(grads.get(id(node)), value, ty)


def _check_shape(value, ty, source: str) -> None:
    """A rule's gradient must have its argument's type: catch a wrong rule where it is made."""
    if isinstance(ty, TupleType):
        for field, field_type in zip(value, ty.fields):
            if field is not None:
                _check_shape(field, field_type, source)
        return
    annotate_types(value, source)
    got = type_of(value)
    if (
        not isinstance(got, TensorType)
        or len(got.shape) != len(ty.shape)
        or got.dtype != ty.dtype
        or any(not isinstance(a, AnyDim) and not isinstance(b, AnyDim) and a != b for a, b in zip(got.shape, ty.shape))
    ):
        raise GradientError(f"{source} produced a gradient of type {got} for a value of type {ty}")


def _seed_value(root, ty):
    if isinstance(ty, TupleType):
        fields = (
            list(root.fields) if isinstance(root, E.Tuple) else [E.TupleGetItem(root, i) for i in range(len(ty.fields))]
        )
        return [_seed_value(f, t) for f, t in zip(fields, ty.fields)]
    return make_call("ones_like", [root]) if _differentiable(ty) else None


def _materialize(value, node, ty) -> E.Expr:
    """A gradient value as one expression; zeros where it is None."""
    if isinstance(ty, TupleType):
        values = value if value is not None else [None] * len(ty.fields)
        fields = (
            list(node.fields) if isinstance(node, E.Tuple) else [E.TupleGetItem(node, i) for i in range(len(ty.fields))]
        )
        return E.Tuple([_materialize(v, f, t) for v, f, t in zip(values, fields, ty.fields)])
    if value is not None:
        return value
    if isinstance(ty, TensorType) and not any(isinstance(d, AnyDim) for d in ty.shape):
        return make_call("zeros", [], {"shape": [int(d) for d in ty.shape], "dtype": ty.dtype})
    return make_call("zeros_like", [node])


# ---------------------------------------------------------------- one backward step


def _propagate(grads, node, value) -> None:
    kind = type(node)
    if kind is E.Call:
        rule = getattr(node.op.definition, "gradient", None)
        if rule is None:
            raise GradientError(f"operator {node.op.name} has no gradient rule (first-order AD)", node.span)
        incoming = annotate_types(_materialize(value, node, type_of(node)), f"the gradient flowing into {node.op.name}")
        arg_grads = rule(node, incoming)
        if len(arg_grads) != len(node.args):
            raise GradientError(
                f"the gradient rule of {node.op.name} returned {len(arg_grads)} gradient(s) for {len(node.args)} argument(s)"
            )
        for arg, arg_grad in zip(node.args, arg_grads):
            _accumulate(grads, arg, arg_grad, f"the gradient rule of {node.op.name}")
    elif kind is E.Tuple:
        for field, field_value in zip(node.fields, value):
            _accumulate(grads, field, field_value, "a tuple's gradient")
    elif kind is E.TupleGetItem:
        tuple_type = type_of(node.tuple_value)
        partial = [None] * len(tuple_type.fields)
        partial[node.index] = value
        _accumulate(grads, node.tuple_value, partial, "a projection's gradient")
