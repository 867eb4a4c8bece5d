"""Greedy shrinking of a failing program: replace subexpressions by smaller ones of the same type
(a branch, an operand, a constant), drop unused lets, globals and parameters, while it still fails."""

from __future__ import annotations

import time

from ...relay import expr as E
from ...relay.printer import astext
from ...relay.ty import TensorType, TupleType
from .batch import parse_program

__all__ = ["shrink"]


def _children(node) -> list:
    if isinstance(node, E.Call):
        return [node.op, *node.args]
    if isinstance(node, E.Let):
        return [node.value, node.body]
    if isinstance(node, E.If):
        return [node.cond, node.true_branch, node.false_branch]
    if isinstance(node, E.Tuple):
        return list(node.fields)
    if isinstance(node, E.TupleGetItem):
        return [node.tuple_value]
    if isinstance(node, E.Function):
        return [node.body]
    if isinstance(node, E.Match):
        return [node.data, *[c.rhs for c in node.clauses]]
    if isinstance(node, E.RefCreate):
        return [node.value]
    if isinstance(node, E.RefRead):
        return [node.ref]
    if isinstance(node, E.RefWrite):
        return [node.ref, node.value]
    return []


def _preorder(body) -> list:
    seen, order, stack = set(), [], [body]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(reversed(_children(node)))
    return order


def _type_of(node):
    return getattr(node, "checked_type_", None)


def _constant(ty) -> E.Expr | None:
    from ...relay import parse_expr

    if isinstance(ty, TensorType) and ty.concrete_shape is not None:
        dims = ", ".join(str(d) for d in ty.shape)
        return parse_expr(f'zeros(shape=[{dims}], dtype="{ty.dtype}")')
    if isinstance(ty, TupleType) and not ty.fields:
        return E.Tuple([])
    return None


def _is_constant(node) -> bool:
    return isinstance(node, E.Constant) or (
        isinstance(node, E.Call) and isinstance(node.op, E.Op) and node.op.name in ("zeros", "ones")
    )


def _replacements(node) -> list:
    """Smaller expressions that could stand for `node` (the caller type-checks each)."""
    from ...relay.analysis import free_vars

    ty = _type_of(node)
    out = []
    if isinstance(node, E.Let):
        if node.var not in free_vars(node.body):
            out.append(node.body)
        constant = _constant(_type_of(node.value))
        if constant is not None and not _is_constant(node.value):
            out.append(E.Let(node.var, constant, node.body))
    if isinstance(node, E.If):
        out += [node.true_branch, node.false_branch]
    if isinstance(node, E.Match):
        out += [c.rhs for c in node.clauses]
    if isinstance(node, E.TupleGetItem) and isinstance(node.tuple_value, E.Tuple):
        out.append(node.tuple_value.fields[node.index])
    if isinstance(node, E.Call) and not _is_constant(node):
        out += [a for a in node.args if _type_of(a) == ty]
        constant = _constant(ty)
        if constant is not None:
            out.append(constant)
    return out


def _replace(body, target, replacement):
    from ...relay.visitor import ExprMutator

    class Replace(ExprMutator):
        def visit(self, expr):
            if expr is target:
                return replacement
            return super().visit(expr)

    return Replace().visit(body)


def _reachable(functions, entry: str = "main") -> list:
    """The (GlobalVar, Function) pairs reachable from `entry` among `functions`, callees first."""
    from ...relay.analysis import called_globals

    by_gv = dict(functions)
    order = [next(gv for gv, _ in functions if gv.name_hint == entry)]
    index = 0
    while index < len(order):
        for callee in called_globals(by_gv[order[index]]):
            if callee in by_gv and callee not in order:
                order.append(callee)
        index += 1
    return [(gv, by_gv[gv]) for gv in reversed(order)]


def _user_functions(mod) -> list:
    from ...relay.prelude import PRELUDE_FUNCTIONS

    return _reachable([(gv, f) for gv, f in mod.functions.items() if gv.name_hint not in PRELUDE_FUNCTIONS])


def _module_text(functions) -> str:
    from ...relay import IRModule

    sub = IRModule()
    for gv, func in _reachable(functions):
        sub.add(gv, func)
    # Without `/* ty= */` comments: candidates are compared by length with the (untyped) original.
    return astext(sub, show_types=False)


def _without_unused_params(functions, inputs):
    """`main` without the parameters it does not use, and the remaining inputs."""
    from ...relay.analysis import free_vars

    out = []
    for gv, func in functions:
        if gv.name_hint == "main":
            used = set(free_vars(func.body))
            keep = [i for i, p in enumerate(func.params) if p in used]
            if len(keep) < len(func.params):
                func = E.Function(
                    [func.params[i] for i in keep], func.body, func.ret_type, func.type_params, func.attrs
                )
                inputs = [inputs[i] for i in keep]
        out.append((gv, func))
    return out, inputs


def _candidates(functions, inputs):
    trimmed, trimmed_inputs = _without_unused_params(functions, inputs)
    if trimmed_inputs is not inputs:
        yield trimmed, trimmed_inputs
    for position, (gv, func) in enumerate(functions):
        for node in _preorder(func.body):
            for replacement in _replacements(node):
                body = replacement if node is func.body else _replace(func.body, node, replacement)
                new_func = E.Function(func.params, body, func.ret_type, func.type_params, func.attrs)
                yield functions[:position] + [(gv, new_func)] + functions[position + 1 :], inputs


def shrink(text: str, inputs: list, still_fails, max_seconds: float = 120.0, log=None) -> tuple[str, list]:
    """The smallest variant found of (text, inputs) for which `still_fails(text, inputs)` holds."""
    deadline = time.monotonic() + max_seconds
    best_text, best_inputs = text, list(inputs)
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        try:
            functions = _user_functions(parse_program(best_text))
        except Exception:
            break
        for candidate, candidate_inputs in _candidates(functions, best_inputs):
            if time.monotonic() > deadline:
                break
            try:
                candidate_text = _module_text(candidate)
                parse_program(candidate_text)
            except Exception:
                continue  # not a valid program any more (e.g. a branch of another type)
            if len(candidate_text) >= len(best_text) and candidate_inputs is best_inputs:
                continue
            if still_fails(candidate_text, candidate_inputs):
                best_text, best_inputs = candidate_text, candidate_inputs
                improved = True
                if log:
                    log(f"[shrink] {len(best_text)} characters")
                break
    return best_text, best_inputs
