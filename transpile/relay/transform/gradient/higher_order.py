"""Higher-order reverse-mode AD (relay.transform.gradient's default mode): closures, references, control flow, ADTs.

The program is translated into one that computes its forward values and, on the side, builds its
own backward pass as a chain of closures:

* every tensor value becomes a pair `(value, ref gradient)` (ad_values.py);
* a reference `bp: ref (fn () -> ())` holds the backward pass recorded so far. Each operator call
  computes its forward result, pairs it with a zero gradient, and replaces `bp` by a closure that
  applies the operator's gradient rule (op/gradients) to the gradient its result has gathered,
  adds the results to its arguments' gradients, then runs the previous `bp`;
* every function (literal, let-bound closure, global) takes the caller's `bp` as an extra
  parameter, so whatever a call computes is recorded in its caller's backward pass; a global @f
  becomes @f_grad, added to the module (as TVM did), recursion included;
* if/match/let/tuples/references/constructors keep their shape, with translated contents.

The gradient function seeds the result with ones, runs `bp`, and reads the parameters' gradients.
As in TVM, a tuple result seeds its first tensor only (the gradient of the first output).
"""

from __future__ import annotations

import collections

from ... import expr as E
from ...deep import deep_recursion
from ...module import IRModule
from ...op.gradients import GradientError
from ...op.registry import make_call
from ...ty import FuncType, TensorType, TupleType
from .ad_values import (
    BACKPROP_TYPE,
    UNIT_TYPE,
    LetList,
    accumulate,
    grad_of,
    has_differentiable_leaf,
    lift,
    reverse_type,
    value_of,
)
from .graph import replace_nodes

__all__ = ["higher_order_gradient"]


@deep_recursion
def higher_order_gradient(func: E.Function, mod: IRModule | None) -> E.Function:
    """`fn(params) -> (result, (d result / d param, ...))` for a typed Function; globals it calls come from `mod`.

    The differentiated globals (@f_grad) are added to `mod`.
    """
    from ...typing import infer_type_expr

    if func.type_params:
        raise GradientError("higher-order AD does not differentiate polymorphic functions (type parameters)", func.span)
    _refuse_primitive(func, "the function")
    infer_type_expr(func, mod)
    for param in func.params:
        _require_tensors(_type_of(param), f"parameter %{param.name_hint}")
    _require_tensors(_type_of(func.body), "the result")
    translator = _ReverseAD(mod)
    bp = E.Var("bp", BACKPROP_TYPE)
    scope = _Scope(bp, collections.ChainMap())
    ll = scope.ll
    ll.bind(bp, E.RefCreate(E.Function([], E.Tuple([]), UNIT_TYPE)))
    lifted = []
    for param in func.params:
        param_type = _type_of(param)
        lifted.append(lift(param, param_type, ll, param.name_hint))
        translator.var_map[param] = lifted[-1]
    result = translator.translate(func.body, scope)
    result_type = _type_of(func.body)
    _seed_first_output(result, result_type, ll)
    ll.push(E.Call(E.RefRead(bp), []), UNIT_TYPE, "_")
    grads = E.Tuple([grad_of(ad, _type_of(p), ll) for ad, p in zip(lifted, func.params)])
    body = ll.wrap(E.Tuple([value_of(result, result_type, ll), grads]))
    ret_type = TupleType([result_type, TupleType([_type_of(p) for p in func.params])])
    out = E.Function(func.params, body, ret_type, (), func.attrs, func.span)
    for gv, grad_func in translator.new_globals:
        mod.add(gv, grad_func)
    infer_type_expr(out, mod)
    return out


def _type_of(node):
    ty = getattr(node, "checked_type_", None)
    if ty is None and isinstance(node, E.Var):
        ty = node.type_annotation
    if ty is None:
        raise GradientError(
            f"higher-order AD: a {type(node).__name__} has no inferred type", getattr(node, "span", None)
        )
    return ty


def _require_tensors(ty, what: str) -> None:
    """Gradients are read from parameters and seeded into results of tensors (nested in tuples) only."""
    stack = [ty]
    while stack:
        item = stack.pop()
        if isinstance(item, TupleType):
            stack.extend(item.fields)
        elif not isinstance(item, TensorType):
            raise GradientError(f"higher-order AD: {what} has type {ty}; it must be tensors or tuples of them")


def _refuse_primitive(func: E.Function, what: str) -> None:
    if func.attrs and func.attrs.get("Primitive", 0):
        raise GradientError(f"higher-order AD does not differentiate fused (Primitive) functions: {what}", func.span)


def _seed_first_output(result: E.Expr, ty, ll: LetList) -> None:
    """Ones into the gradient of the result's first tensor (TVM's seed for tuple results: the first output)."""
    path = _first_tensor_path(ty)
    if path is None:
        raise GradientError(f"higher-order AD: the result (of type {ty}) holds no tensor to differentiate")
    for index in path:
        ty = ty.fields[index]
        result = ll.push(E.TupleGetItem(result, index), reverse_type(ty), "first")
    value = E.TupleGetItem(result, 0)
    ll.push(E.RefWrite(E.TupleGetItem(result, 1), make_call("ones_like", [value])), UNIT_TYPE, "_")


def _first_tensor_path(ty) -> list[int] | None:
    if isinstance(ty, TensorType):
        return []
    for index, field in enumerate(ty.fields):
        path = _first_tensor_path(field)
        if path is not None:
            return [index] + path
    return None


class _Scope:
    """Where translated code goes: a let list, the backpropagator in scope, and the values computed so far.

    `memo` maps a shared input node to the variable holding its translation; a nested scope (branch,
    clause, function body) sees its enclosing scopes' entries, never the other way round.
    """

    def __init__(self, bp: E.Var, memo: collections.ChainMap):
        self.ll = LetList()
        self.bp = bp
        self.memo = memo

    def nested(self, bp: E.Var | None = None) -> "_Scope":
        return _Scope(bp if bp is not None else self.bp, self.memo.new_child())


class _ReverseAD:
    """Translates typed expressions into AD code; `translate` returns a variable (or global) bound in the scope."""

    def __init__(self, mod: IRModule | None):
        self.mod = mod
        self.var_map: dict[E.Var, E.Expr] = {}
        self.global_map: dict[str, E.GlobalVar] = {}
        self.new_globals: list[tuple[E.GlobalVar, E.Function]] = []

    def translate(self, node: E.Expr, scope: _Scope) -> E.Expr:
        kind = type(node)
        if kind is E.Var:
            if node not in self.var_map:
                raise GradientError(
                    f"higher-order AD: free variable %{node.name_hint} (the function must be closed)", node.span
                )
            return self.var_map[node]
        if kind is E.GlobalVar:
            return self._global(node)
        if kind is E.Let:
            return self._let(node, scope)
        known = scope.memo.get(id(node))
        if known is not None:
            return known
        handler = _HANDLERS.get(kind)
        if handler is None:
            raise GradientError(
                f"higher-order AD cannot differentiate a {kind.__name__} expression", getattr(node, "span", None)
            )
        result = handler(self, node, scope)
        scope.memo[id(node)] = result
        return result

    # ------------------------------------------------------------ binding forms

    def _bind_var(self, var: E.Var) -> E.Var:
        new = E.Var(var.name_hint, reverse_type(_type_of(var), f"%{var.name_hint}"), var.span)
        self.var_map[var] = new
        return new

    def _let(self, node: E.Let, scope: _Scope) -> E.Expr:
        while isinstance(node, E.Let):
            if isinstance(node.value, E.Function):
                # Bound to its own variable first: a recursive closure refers to itself.
                new_var = self._bind_var(node.var)
                scope.ll.bind(new_var, self._function(node.value, scope))
            else:
                self.var_map[node.var] = self.translate(node.value, scope)
            node = node.body
        return self.translate(node, scope)

    def _function(self, func: E.Function, scope: _Scope) -> E.Function:
        _refuse_primitive(func, "a function literal")
        params = [self._bind_var(p) for p in func.params]
        inner = scope.nested(E.Var("bp", BACKPROP_TYPE))
        body = inner.ll.wrap(self.translate(func.body, inner))
        ret_type = reverse_type(func.ret_type, "a function's result") if func.ret_type is not None else None
        return E.Function(params + [inner.bp], body, ret_type, func.type_params, func.attrs, func.span)

    def _global(self, gv: E.GlobalVar) -> E.GlobalVar:
        known = self.global_map.get(gv.name_hint)
        if known is not None:
            return known
        if self.mod is None or gv not in self.mod:
            raise GradientError(
                f"higher-order AD: @{gv.name_hint} is called but no module defining it was given", gv.span
            )
        func = self.mod[gv]
        taken = {g.name_hint for g in self.mod.get_global_vars()} | set(self.global_map)
        name, count = f"{gv.name_hint}_grad", 1
        while name in taken:
            name, count = f"{gv.name_hint}_grad{count}", count + 1
        new_gv = self.global_map[gv.name_hint] = E.GlobalVar(name)
        _refuse_primitive(func, f"@{gv.name_hint}")
        root = _Scope(None, collections.ChainMap())
        self.new_globals.append((new_gv, self._function(func, root)))
        return new_gv

    # ------------------------------------------------------------ expressions

    def _constant(self, node: E.Constant, scope: _Scope) -> E.Expr:
        return lift(node, _type_of(node), scope.ll, "const")

    def _tuple(self, node: E.Tuple, scope: _Scope) -> E.Expr:
        fields = [self.translate(f, scope) for f in node.fields]
        return scope.ll.push(E.Tuple(fields, node.span), reverse_type(_type_of(node)), "tuple")

    def _tuple_get_item(self, node: E.TupleGetItem, scope: _Scope) -> E.Expr:
        value = self.translate(node.tuple_value, scope)
        return scope.ll.push(E.TupleGetItem(value, node.index, node.span), reverse_type(_type_of(node)), "field")

    def _if(self, node: E.If, scope: _Scope) -> E.Expr:
        cond = self.translate(node.cond, scope)
        flag = scope.ll.push(E.TupleGetItem(cond, 0), _type_of(node.cond), "cond")
        branches = []
        for branch in (node.true_branch, node.false_branch):
            inner = scope.nested()
            branches.append(inner.ll.wrap(self.translate(branch, inner)))
        return scope.ll.push(E.If(flag, *branches, node.span), reverse_type(_type_of(node)), "if")

    def _function_literal(self, node: E.Function, scope: _Scope) -> E.Expr:
        return scope.ll.push(self._function(node, scope), reverse_type(_type_of(node)), "closure")

    def _constructor(self, node: E.Constructor, scope: _Scope) -> E.Expr:
        # A constructor used as a function value: wrapped so that it takes the backpropagator too.
        _check_constructor(node)
        ty = _type_of(node)
        params = [E.Var(f"field{i}", reverse_type(a)) for i, a in enumerate(ty.arg_types)]
        body = E.Call(node, params)
        wrapper = E.Function(params + [E.Var("bp", BACKPROP_TYPE)], body, reverse_type(ty.ret_type), ty.type_params)
        return scope.ll.push(wrapper, reverse_type(ty), node.name_hint)

    def _match(self, node: E.Match, scope: _Scope) -> E.Expr:
        data = self.translate(node.data, scope)
        clauses = []
        for clause in node.clauses:
            lhs = self._pattern(clause.lhs)
            inner = scope.nested()
            clauses.append(E.Clause(lhs, inner.ll.wrap(self.translate(clause.rhs, inner)), clause.span))
        return scope.ll.push(E.Match(data, clauses, node.complete, node.span), reverse_type(_type_of(node)), "match")

    def _pattern(self, pattern: E.Pattern) -> E.Pattern:
        kind = type(pattern)
        if kind is E.PatternVar:
            return E.PatternVar(self._bind_var(pattern.var), pattern.span)
        if kind is E.PatternConstructor:
            _check_constructor(pattern.constructor)
            return E.PatternConstructor(pattern.constructor, [self._pattern(p) for p in pattern.patterns], pattern.span)
        if kind is E.PatternTuple:
            return E.PatternTuple([self._pattern(p) for p in pattern.patterns], pattern.span)
        return pattern

    def _ref_create(self, node: E.RefCreate, scope: _Scope) -> E.Expr:
        value = self.translate(node.value, scope)
        return scope.ll.push(E.RefCreate(value, node.span), reverse_type(_type_of(node)), "ref")

    def _ref_read(self, node: E.RefRead, scope: _Scope) -> E.Expr:
        ref = self.translate(node.ref, scope)
        return scope.ll.push(E.RefRead(ref, node.span), reverse_type(_type_of(node)), "read")

    def _ref_write(self, node: E.RefWrite, scope: _Scope) -> E.Expr:
        ref = self.translate(node.ref, scope)
        value = self.translate(node.value, scope)
        return scope.ll.push(E.RefWrite(ref, value, node.span), UNIT_TYPE, "_")

    def _op(self, node: E.Op, scope: _Scope) -> E.Expr:
        raise GradientError(f"higher-order AD: operator {node.name} used as a value (outside a call)", node.span)

    # ------------------------------------------------------------ calls

    def _call(self, node: E.Call, scope: _Scope) -> E.Expr:
        callee = node.op
        if isinstance(callee, E.Op):
            return self._operator_call(node, scope)
        ty = reverse_type(_type_of(node))
        if isinstance(callee, E.Constructor):
            _check_constructor(callee)
            args = [self.translate(a, scope) for a in node.args]
            return scope.ll.push(E.Call(callee, args, span=node.span), ty, callee.name_hint)
        function = self.translate(callee, scope)
        args = [self.translate(a, scope) for a in node.args]
        return scope.ll.push(E.Call(function, args + [scope.bp], span=node.span), ty, "call")

    def _operator_call(self, node: E.Call, scope: _Scope) -> E.Expr:
        ll = scope.ll
        result_type = _type_of(node)
        values, ads = [], []
        for arg in node.args:
            if isinstance(arg, E.Constant):
                values.append(arg)  # a literal takes no gradient: no pair needed
                ads.append(None)
            else:
                ad = self.translate(arg, scope)
                values.append(value_of(ad, _type_of(arg), ll))
                ads.append(ad)
        forward = E.Call(node.op, values, node.attrs, node.type_args, node.span)
        forward._set_checked_type(result_type)
        out = ll.push(forward, result_type, "out")
        result = lift(out, result_type, ll, "ad")
        needs_backward = has_differentiable_leaf(result_type) and any(
            ad is not None and has_differentiable_leaf(_type_of(arg)) for ad, arg in zip(ads, node.args)
        )
        if needs_backward:
            self._record_backward(node, forward, out, result, ads, scope)
        return result

    def _record_backward(self, node, forward, out, result, ads, scope: _Scope) -> None:
        """bp := fn () { arguments' gradients += rule(result's gradient); previous bp () }."""
        rule = getattr(node.op.definition, "gradient", None)
        if rule is None:
            raise GradientError(f"operator {node.op.name} has no gradient rule (higher-order AD)", node.span)
        previous = scope.ll.push(E.RefRead(scope.bp), FuncType([], UNIT_TYPE), "previous")
        back = LetList()
        grad = grad_of(result, _type_of(node), back)
        arg_grads = list(rule(forward, grad))
        if len(arg_grads) != len(node.args):
            raise GradientError(
                f"the gradient rule of {node.op.name} returned {len(arg_grads)} gradient(s) for {len(node.args)} argument(s)"
            )
        present = [g for g in arg_grads if g is not None]
        # Rules refer to the forward call itself (exp: grad * orig); the backward pass reads its value.
        rewritten = iter(replace_nodes(present, {id(forward): out}))
        arg_grads = [next(rewritten) if g is not None else None for g in arg_grads]
        for ad, arg, arg_grad in zip(ads, node.args, arg_grads):
            if ad is not None:
                accumulate(ad, _type_of(arg), arg_grad, back)
        step = E.Function([], back.wrap(E.Call(previous, [])), UNIT_TYPE)
        scope.ll.push(E.RefWrite(scope.bp, step), UNIT_TYPE, "_")


def _check_constructor(ctor: E.Constructor) -> None:
    """ADTs carry AD values through their type parameters only: a concrete tensor or function field would change type."""
    for field_type in ctor.inputs:
        if reverse_type(field_type, f"a field of {ctor.name_hint}") != field_type:
            raise GradientError(
                f"higher-order AD: constructor {ctor.name_hint} has a field of type {field_type}; only ADTs whose "
                "tensors and functions come through type parameters (List[T], Option[T], ...) are supported",
                ctor.span,
            )


_HANDLERS = {
    E.Constant: _ReverseAD._constant,
    E.Tuple: _ReverseAD._tuple,
    E.TupleGetItem: _ReverseAD._tuple_get_item,
    E.If: _ReverseAD._if,
    E.Function: _ReverseAD._function_literal,
    E.Constructor: _ReverseAD._constructor,
    E.Match: _ReverseAD._match,
    E.RefCreate: _ReverseAD._ref_create,
    E.RefRead: _ReverseAD._ref_read,
    E.RefWrite: _ReverseAD._ref_write,
    E.Op: _ReverseAD._op,
    E.Call: _ReverseAD._call,
}
