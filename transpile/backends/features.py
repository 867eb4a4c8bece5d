"""What a typed Relay program needs from a backend: features (see base.FEATURE_ORDER) with the span of their first use.

Only code reachable from the entry function counts. Definitions (see also FEATURE_DESCRIPTIONS):
- closures: a `fn` expression that is not a global's own body (nor a `Primitive=1` fused group,
  which is a kernel), a global function or constructor used other than as the callee of a call,
  or a function type in the entry's parameter or result types;
- adts: a constructor, a `match`, or an ADT type in the type of a reachable expression or parameter;
- refs: ref creation/read/write, or a reference type in a reachable type;
- polymorphism: a reachable function with type parameters;
- recursion: a reference to a function from inside its own recursion group (a cycle of globals,
  or a let-bound `fn` mentioning its own variable);
- non_tail_recursion: such a reference that is not the callee of a call in tail position of the
  group member's own body (inside a nested `fn`, or used as a value, counts as non-tail);
- dynamic_shapes: an Any (`?`) dimension in a reachable type.
"""

from __future__ import annotations

from ..errors import Span, TranspileError, UnsupportedFeatureError
from ..relay import expr as E
from ..relay.deep import deep_recursion
from ..relay.ty import AnyDim, FuncType, GlobalTypeVar, RefType, TensorType, TupleType, TypeCall
from .base import (
    ADTS,
    CLOSURES,
    DYNAMIC_SHAPES,
    FEATURE_DESCRIPTIONS,
    FEATURE_ORDER,
    NON_TAIL_RECURSION,
    POLYMORPHISM,
    RECURSION,
    REFS,
)

__all__ = ["required_features", "check_supported", "missing_features"]


def _reachable_globals(mod, entry_gv) -> tuple[list, dict]:
    """Globals reachable from the entry in discovery order, and each one's referenced globals."""
    from ..relay.analysis import called_globals

    order = [entry_gv]
    edges: dict = {}
    index = 0
    while index < len(order):
        gv = order[index]
        index += 1
        callees = [g for g in called_globals(mod.functions[gv]) if g in mod.functions]
        edges[gv] = callees
        for callee in callees:
            if callee not in edges and callee not in order:
                order.append(callee)
    return order, edges


def _recursion_groups(order, edges) -> dict:
    """Global -> frozenset of the globals in its strongly connected component, for recursive globals only."""
    index_of: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    groups: dict = {}
    counter = [0]

    def connect(v):
        index_of[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index_of:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index_of[w])
        if low[v] == index_of[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w is v or w == v:
                    break
            members = frozenset(component)
            if len(component) > 1 or v in edges.get(v, ()):
                for w in component:
                    groups[w] = members

    for v in order:
        if v not in index_of:
            connect(v)
    return groups


class _Scan:
    """Walks reachable function bodies once, recording the first use of each feature."""

    def __init__(self, mod):
        self.mod = mod
        self.found: dict[str, Span | None] = {}
        self._seen_types: dict[int, tuple] = {}
        self._visited: set = set()

    def note(self, feature: str, span) -> None:
        if feature not in self.found:
            self.found[feature] = span

    # ----- types ---------------------------------------------------------------------------
    def note_type(self, ty, span, closures_from_functions: bool = False) -> None:
        if ty is None:
            return
        cached = self._seen_types.get(id(ty))
        if cached is None:
            # The type is kept alive in the cache so its id is not reused by another object.
            cached = self._seen_types[id(ty)] = (ty, self._type_kinds(ty))
        for feature in cached[1]:
            if feature == CLOSURES and not closures_from_functions:
                continue
            self.note(feature, span)

    def _type_kinds(self, ty) -> frozenset:
        kinds: set = set()
        stack = [ty]
        while stack:
            t = stack.pop()
            if isinstance(t, TensorType):
                if any(isinstance(d, AnyDim) for d in t.shape):
                    kinds.add(DYNAMIC_SHAPES)
            elif isinstance(t, TupleType):
                stack.extend(t.fields)
            elif isinstance(t, (TypeCall, GlobalTypeVar)):
                kinds.add(ADTS)
                if isinstance(t, TypeCall):
                    stack.extend(t.args)
            elif isinstance(t, RefType):
                kinds.add(REFS)
                stack.append(t.value)
            elif isinstance(t, FuncType):
                kinds.add(CLOSURES)
                stack.extend(t.arg_types)
                stack.append(t.ret_type)
        return frozenset(kinds)

    # ----- functions -----------------------------------------------------------------------
    def scan_global(self, gv, func, group: frozenset, is_entry: bool) -> None:
        span = func.span
        if func.type_params:
            self.note(POLYMORPHISM, span)
        for param in func.params:
            ty = getattr(param, "checked_type_", None) or param.type_annotation
            self.note_type(ty, param.span or span, closures_from_functions=is_entry)
        self.walk(func.body, True, group, frozenset(), span)
        if is_entry:
            # A function-typed result crosses into Python even when the body's first use is elsewhere.
            ret = getattr(func, "checked_type_", None)
            ret = ret.ret_type if isinstance(ret, FuncType) else func.ret_type
            self.note_type(ret, span, closures_from_functions=True)

    def walk(self, expr, tail: bool, own: frozenset, outer: frozenset, near) -> None:
        """`own`: recursion targets whose tail calls here are loops; `outer`: targets of enclosing functions."""
        # Graph-form programs share sub-expressions (a DAG): visit each node once per context.
        key = (id(expr), tail, own, outer)
        if key in self._visited:
            return
        self._visited.add(key)
        # Let chains are walked iteratively: real programs bind thousands of values in sequence.
        while isinstance(expr, E.Let):
            near = expr.span or near
            value = expr.value
            if isinstance(value, E.Function) and _mentions(value, expr.var):
                self.walk_function(value, frozenset([expr.var]), own | outer, near)
            else:
                self.walk(value, False, own, outer, near)
            self.note_type(getattr(expr.var, "checked_type_", None) or expr.var.type_annotation, near)
            expr = expr.body
        near = expr.span or near
        self.note_type(getattr(expr, "checked_type_", None), near)
        targets = own | outer
        if isinstance(expr, E.Call):
            self.walk_call(expr, tail, own, outer, near)
        elif isinstance(expr, (E.Var, E.GlobalVar)):
            if expr in targets:
                self.note(RECURSION, near)
                self.note(NON_TAIL_RECURSION, near)
            if isinstance(expr, E.GlobalVar):
                self.note(CLOSURES, near)
                self.note_polymorphic_use(expr, near)
        elif isinstance(expr, E.Constructor):
            self.note(ADTS, near)
            self.note(CLOSURES, near)
        elif isinstance(expr, E.Function):
            self.walk_function(expr, frozenset(), targets, near)
        elif isinstance(expr, E.If):
            self.walk(expr.cond, False, own, outer, near)
            self.walk(expr.true_branch, tail, own, outer, near)
            self.walk(expr.false_branch, tail, own, outer, near)
        elif isinstance(expr, E.Match):
            self.note(ADTS, near)
            self.walk(expr.data, False, own, outer, near)
            for clause in expr.clauses:
                self.walk(clause.rhs, tail, own, outer, clause.span or near)
        elif isinstance(expr, E.Tuple):
            for field in expr.fields:
                self.walk(field, False, own, outer, near)
        elif isinstance(expr, E.TupleGetItem):
            self.walk(expr.tuple_value, False, own, outer, near)
        elif isinstance(expr, (E.RefCreate, E.RefRead, E.RefWrite)):
            self.note(REFS, near)
            for child in (getattr(expr, "ref", None), getattr(expr, "value", None)):
                if child is not None:
                    self.walk(child, False, own, outer, near)
        # Var (non-recursive), Constant and Op need nothing beyond their types.

    def walk_function(self, func, own: frozenset, outer: frozenset, near) -> None:
        near = func.span or near
        # A `Primitive=1` function is an already-fused group of operators: a kernel, not a closure.
        if not _is_primitive(func):
            self.note(CLOSURES, near)
        if func.type_params:
            self.note(POLYMORPHISM, near)
        for param in func.params:
            self.note_type(getattr(param, "checked_type_", None) or param.type_annotation, param.span or near)
        self.walk(func.body, True, own, outer, near)

    def walk_call(self, call, tail: bool, own, outer, near) -> None:
        op = call.op
        if isinstance(op, (E.GlobalVar, E.Var)) and (op in own or op in outer):
            self.note(RECURSION, near)
            if not (tail and op in own):
                self.note(NON_TAIL_RECURSION, near)
            if isinstance(op, E.GlobalVar):
                self.note_polymorphic_use(op, near)
        elif isinstance(op, E.GlobalVar):
            self.note_polymorphic_use(op, near)
        elif isinstance(op, E.Constructor):
            self.note(ADTS, near)
        elif not isinstance(op, (E.Op, E.Var)):
            self.walk(op, False, own, outer, near)
        for arg in call.args:
            self.walk(arg, False, own, outer, near)

    def note_polymorphic_use(self, gv, near) -> None:
        func = self.mod.functions.get(gv)
        if func is not None and func.type_params:
            self.note(POLYMORPHISM, near)


def _is_primitive(func) -> bool:
    attrs = func.attrs
    if attrs is None or "Primitive" not in attrs:
        return False
    try:
        return int(attrs["Primitive"]) == 1
    except (TypeError, ValueError):
        return False


def _mentions(func, var) -> bool:
    from ..relay.analysis import free_vars

    return var in free_vars(func)


@deep_recursion
def required_features(mod, entry: str = "main") -> dict:
    """Features the program needs, in FEATURE_ORDER, each with the span of its first use (or None).

    `mod` should be type-checked (relay.transform.InferType()); an untyped module is checked here.
    """
    if entry not in mod:
        raise TranspileError(f"the module has no function @{entry}")
    entry_gv = mod.get_global_var(entry)
    if getattr(mod.functions[entry_gv], "checked_type_", None) is None:
        from ..relay.typing import infer_type

        mod = infer_type(mod)
        entry_gv = mod.get_global_var(entry)
    order, edges = _reachable_globals(mod, entry_gv)
    groups = _recursion_groups(order, edges)
    scan = _Scan(mod)
    for gv in order:
        scan.scan_global(gv, mod.functions[gv], groups.get(gv, frozenset()), gv == entry_gv)
    return {feature: scan.found[feature] for feature in FEATURE_ORDER if feature in scan.found}


def missing_features(backend, mod, entry: str = "main") -> dict:
    """The subset of required_features the backend lacks (same order and spans)."""
    needed = required_features(mod, entry)
    return {feature: span for feature, span in needed.items() if feature not in backend.capabilities}


def check_supported(backend, mod, entry: str = "main") -> None:
    """Raise UnsupportedFeatureError for the first feature (in FEATURE_ORDER) the backend lacks."""
    missing = missing_features(backend, mod, entry)
    if not missing:
        return
    feature, span = next(iter(missing.items()))
    detail = FEATURE_DESCRIPTIONS.get(feature, "")
    others = [f for f in missing if f != feature]
    if others:
        detail += f" (it also lacks: {', '.join(others)})"
    error = UnsupportedFeatureError(feature, backend.name, span, detail)
    error.missing = tuple(missing)
    raise error
