"""Compiles typed Relay functions into trees of Python closures, one per expression node.

Each compiled node is a function `ev(frame) -> value`. A frame is a Python list per function
activation: slot 0 is the enclosing frame (the environment a closure captured), then the
parameters, let- and pattern-bound variables, and the cached values of shared nodes: a node that
is used more than once in a function body (a graph binding `%0` referenced twice) is evaluated
once per activation and its value kept in its slot.

Calls between Python closures are plain Python-to-Python calls (no C frames in between), so deep
Relay recursion only costs interpreter frames, which the big-stack thread of `deep.run_deep` and
the high recursion limit accommodate; a depth counter turns runaway recursion into an error.
"""

from __future__ import annotations

import numpy as np

from ...errors import EvaluationError
from ...runtime import ADTValue, RefValue
from .. import expr as E
from ..op.registry import normalize_attrs
from ..ty import AnyDim, FuncType, TensorType, TupleType
from .narrowing import guarded, shape_guard
from .tailcalls import TailCall, looping_body, tail_call_sites
from .values import UNSET, Closure, ConstructorFunction, FunctionCode, OpFunction, short_value

__all__ = ["Compiler", "MAX_CALL_DEPTH", "too_deep"]

# Nested Relay calls allowed before "recursion too deep"; the 1 GiB stack thread and the
# recursion limit set by deep.run_deep leave room for this many.
MAX_CALL_DEPTH = 1_000_000


def too_deep(span=None) -> EvaluationError:
    return EvaluationError(
        f"recursion too deep: more than {MAX_CALL_DEPTH} nested Relay function calls (runaway recursion?)", span
    )


def _location(span) -> str:
    return str(span) if span is not None else "<unknown location>"


def _raiser(error: EvaluationError):
    """An evaluator that fails when reached (programs may contain unreachable unsupported parts)."""

    def ev(fr):
        raise error

    return ev


class _Scope:
    """The variables of one function: Var -> slot; `parent` is the enclosing function's scope."""

    __slots__ = ("parent", "slots", "size")

    def __init__(self, parent):
        self.parent = parent
        self.slots: dict = {}
        self.size = 1  # slot 0 holds the enclosing frame

    def declare(self, var) -> int:
        slot = self.slots.get(var)
        if slot is None:
            slot = self.slots[var] = self.size
            self.size += 1
        return slot

    def new_slot(self) -> int:
        self.size += 1
        return self.size - 1

    def lookup(self, var):
        depth = 0
        scope = self
        while scope is not None:
            slot = scope.slots.get(var)
            if slot is not None:
                return depth, slot
            scope = scope.parent
            depth += 1
        return None


class _FunctionContext:
    __slots__ = ("scope", "shared", "memo", "code", "self_var", "tail_sites", "has_tail_calls")

    def __init__(self, scope, shared, code, self_var):
        self.scope = scope
        self.shared = shared
        self.memo: dict = {}
        self.code = code
        self.self_var = self_var  # the let-bound Var naming this closure (a letrec), or None
        self.tail_sites = tail_call_sites(code.func.body, shared)
        self.has_tail_calls = False


_LEAVES = (E.Var, E.GlobalVar, E.Constant, E.Op, E.Constructor)


def _shared_nodes(body) -> set:
    """ids of the non-leaf nodes referenced more than once in a function body (not entering nested functions)."""
    counts: dict = {}
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, _LEAVES):
            continue
        key = id(node)
        if key in counts:
            counts[key] += 1
            continue
        counts[key] = 1
        kind = type(node)
        if kind is E.Call:
            stack.append(node.op)
            stack.extend(node.args)
        elif kind is E.Tuple:
            stack.extend(node.fields)
        elif kind is E.TupleGetItem:
            stack.append(node.tuple_value)
        elif kind is E.Let:
            stack.append(node.value)
            stack.append(node.body)
        elif kind is E.If:
            stack.extend((node.cond, node.true_branch, node.false_branch))
        elif kind is E.Match:
            stack.append(node.data)
            stack.extend(c.rhs for c in node.clauses)
        elif kind is E.RefCreate:
            stack.append(node.value)
        elif kind is E.RefRead:
            stack.append(node.ref)
        elif kind is E.RefWrite:
            stack.extend((node.ref, node.value))
    return {key for key, count in counts.items() if count > 1}


def _cached(slot: int, inner):
    def ev(fr):
        value = fr[slot]
        if value is UNSET:
            value = fr[slot] = inner(fr)
        return value

    return ev


class Compiler:
    """Turns the functions of one typed module into FunctionCode objects."""

    def __init__(self, interp):
        self.interp = interp
        self.state = interp.state
        self._dispatch = {
            E.Var: self._var,
            E.GlobalVar: self._global_var,
            E.Constant: self._constant,
            E.Tuple: self._tuple,
            E.TupleGetItem: self._tuple_get_item,
            E.Let: self._let,
            E.If: self._if,
            E.Function: self._function,
            E.Call: self._call,
            E.Match: self._match,
            E.RefCreate: self._ref_create,
            E.RefRead: self._ref_read,
            E.RefWrite: self._ref_write,
            E.Op: self._op_value,
            E.Constructor: self._constructor_value,
        }

    # ----- functions -------------------------------------------------------------------------
    def compile_body(self, code: FunctionCode, parent_scope, self_var=None) -> None:
        scope = _Scope(parent_scope)
        for param in code.params:
            scope.declare(param)
        ctx = _FunctionContext(scope, _shared_nodes(code.func.body), code, self_var)
        func = code.func
        body = self.expr(func.body, ctx)
        code.template = [None] + [UNSET] * (scope.size - 1)
        if ctx.has_tail_calls:
            body = looping_body(body, code.template, code.arity)
        declared = getattr(func, "checked_type_", None)
        declared = getattr(declared, "ret_type", None) or func.ret_type
        code.body = guarded(body, shape_guard(_type(func.body), declared, func.span))

    def expr_as(self, node, declared, ctx):
        """The evaluator of `node`, whose value is checked to have the sizes `declared` fixes."""
        return guarded(self.expr(node, ctx), shape_guard(_type(node), declared, getattr(node, "span", None)))

    def _self_tail_call(self, call, ctx):
        """An evaluator for a call of the function being compiled, in its tail position; or None."""
        if id(call) not in ctx.tail_sites or len(call.args) != ctx.code.arity:
            return None
        op = call.op
        if op is not ctx.self_var and not (isinstance(op, E.GlobalVar) and self.interp.codes.get(op) is ctx.code):
            return None
        ctx.has_tail_calls = True
        args = [self.expr_as(a, t, ctx) for a, t in zip(call.args, ctx.code.param_types)]
        return lambda fr: TailCall([a(fr) for a in args])

    def expr(self, node, ctx: _FunctionContext):
        key = id(node)
        if key in ctx.shared:
            ev = ctx.memo.get(key)
            if ev is None:
                inner = self._compile_node(node, ctx)
                ev = ctx.memo[key] = _cached(ctx.scope.new_slot(), inner)
            return ev
        return self._compile_node(node, ctx)

    def _compile_node(self, node, ctx):
        handler = self._dispatch.get(type(node))
        if handler is None:
            return _raiser(EvaluationError(f"the interpreter cannot evaluate a {type(node).__name__}", node.span))
        return handler(node, ctx)

    # ----- leaves ------------------------------------------------------------------------------
    def _var(self, var, ctx):
        found = ctx.scope.lookup(var)
        if found is None:
            return _raiser(EvaluationError(f"free variable %{var.name_hint} has no value", var.span))
        depth, slot = found
        if depth == 0:
            return lambda fr: fr[slot]
        if depth == 1:
            return lambda fr: fr[0][slot]
        if depth == 2:
            return lambda fr: fr[0][0][slot]

        def ev(fr):
            for _ in range(depth):
                fr = fr[0]
            return fr[slot]

        return ev

    def _global_var(self, gv, ctx):
        closure = self.interp.global_closures.get(gv)
        if closure is None:
            return _raiser(EvaluationError(f"the module has no function @{gv.name_hint}", gv.span))
        return lambda fr: closure

    def _constant(self, const, ctx):
        data = const.data
        return lambda fr: data

    def _op_value(self, op, ctx):
        opdef = op.definition
        if opdef is None:
            return _raiser(_unknown_op(op.name, op.span))
        ty = getattr(op, "checked_type_", None)
        out_type = ty.ret_type if isinstance(ty, FuncType) else None
        value = OpFunction(opdef, normalize_attrs(opdef, {}), out_type)
        return lambda fr: value

    def _constructor_value(self, ctor, ctx):
        value = ConstructorFunction(ctor.name_hint, len(ctor.inputs))
        return lambda fr: value

    # ----- structure ---------------------------------------------------------------------------
    def _tuple(self, tup, ctx):
        fields = [self.expr(f, ctx) for f in tup.fields]
        if not fields:
            return lambda fr: ()
        if len(fields) == 1:
            (f0,) = fields
            return lambda fr: (f0(fr),)
        if len(fields) == 2:
            f0, f1 = fields
            return lambda fr: (f0(fr), f1(fr))
        if len(fields) == 3:
            f0, f1, f2 = fields
            return lambda fr: (f0(fr), f1(fr), f2(fr))
        return lambda fr: tuple([f(fr) for f in fields])

    def _tuple_get_item(self, node, ctx):
        tup = self.expr(node.tuple_value, ctx)
        index = node.index
        return lambda fr: tup(fr)[index]

    def _let(self, let, ctx):
        # Let chains are compiled and run iteratively: programs bind thousands of values in a row.
        bindings = []
        node = let
        while isinstance(node, E.Let) and (node is let or id(node) not in ctx.shared):
            slot = ctx.scope.declare(node.var)  # declared first: a let-bound function may call itself
            value = self._bound_value(node.var, node.value, ctx)
            guard = shape_guard(_type(node.value), _type(node.var), node.value.span or node.span)
            bindings.append((slot, guarded(value, guard)))
            node = node.body
        body = self.expr(node, ctx)
        if len(bindings) == 1:
            ((slot, value),) = bindings

            def ev(fr):
                fr[slot] = value(fr)
                return body(fr)

            return ev

        def ev_chain(fr):
            for slot, value in bindings:
                fr[slot] = value(fr)
            return body(fr)

        return ev_chain

    def _bound_value(self, var, value, ctx):
        if isinstance(value, E.Function) and id(value) not in ctx.shared:
            return self._function(value, ctx, name=f"%{var.name_hint}", self_var=var)
        return self.expr(value, ctx)

    def _if(self, node, ctx):
        cond = self.expr(node.cond, ctx)
        then = self.expr_as(node.true_branch, _type(node), ctx)
        other = self.expr_as(node.false_branch, _type(node), ctx)
        return lambda fr: then(fr) if cond(fr) else other(fr)

    def _function(self, func, ctx, name: str = "fn", self_var=None):
        code = FunctionCode(name, func, self.interp)
        self.compile_body(code, ctx.scope, self_var)
        return lambda fr: Closure(code, fr)

    # ----- references --------------------------------------------------------------------------
    def _ref_create(self, node, ctx):
        value = self.expr(node.value, ctx)
        return lambda fr: RefValue(value(fr))

    def _ref_read(self, node, ctx):
        ref = self.expr(node.ref, ctx)
        return lambda fr: ref(fr).value

    def _ref_write(self, node, ctx):
        ref = self.expr(node.ref, ctx)
        value = self.expr(node.value, ctx)

        def ev(fr):
            cell = ref(fr)
            cell.value = value(fr)
            return ()

        return ev

    # ----- calls -------------------------------------------------------------------------------
    def _call(self, call, ctx):
        op = call.op
        tail = self._self_tail_call(call, ctx)
        if tail is not None:
            return tail
        if isinstance(op, E.Op):
            return self._op_call(call, ctx)
        if isinstance(op, E.Constructor):
            return self._constructor_call(call, ctx)
        if isinstance(op, E.GlobalVar) and op in self.interp.codes:
            return self._global_call(call, ctx)
        return self._closure_call(call, ctx)

    def _op_call(self, call, ctx):
        op = call.op
        opdef = op.definition
        if opdef is None:
            return _raiser(_unknown_op(op.name, call.span))
        attrs = call.attrs
        if attrs is None:
            try:
                attrs = normalize_attrs(opdef, {})
            except ValueError as exc:
                return _raiser(EvaluationError(str(exc), call.span))
        args = [self.expr(a, ctx) for a in call.args]
        impl = opdef.numpy_impl
        out_type = getattr(call, "checked_type_", None)
        name = op.name
        span = call.span
        finish = _result_normalizer(out_type, name, span)

        def run(values):
            try:
                result = impl(values, attrs, out_type)
            except (EvaluationError, RecursionError, MemoryError):
                raise
            except Exception as exc:
                raise EvaluationError(f"operator {name} failed: {type(exc).__name__}: {exc}", span) from exc
            return finish(result)

        if len(args) == 1:
            (a0,) = args
            return lambda fr: run([a0(fr)])
        if len(args) == 2:
            a0, a1 = args
            return lambda fr: run([a0(fr), a1(fr)])
        return lambda fr: run([a(fr) for a in args])

    def _constructor_call(self, call, ctx):
        ctor = call.op
        name = ctor.name_hint
        args = [self.expr(a, ctx) for a in call.args]
        if len(args) != len(ctor.inputs):
            return _raiser(
                EvaluationError(f"constructor {name} takes {len(ctor.inputs)} argument(s), got {len(args)}", call.span)
            )
        if not args:
            value = ADTValue(name, ())
            return lambda fr: value
        if len(args) == 1:
            (a0,) = args
            return lambda fr: ADTValue(name, (a0(fr),))
        if len(args) == 2:
            a0, a1 = args
            return lambda fr: ADTValue(name, (a0(fr), a1(fr)))
        return lambda fr: ADTValue(name, [a(fr) for a in args])

    def _global_call(self, call, ctx):
        code = self.interp.codes[call.op]
        args = [self.expr_as(a, t, ctx) for a, t in zip(call.args, _padded(code.param_types, len(call.args)))]
        if len(args) != code.arity:
            return _raiser(EvaluationError(f"@{code.name} takes {code.arity} argument(s), got {len(args)}", call.span))
        state = self.state
        span = call.span
        limit = MAX_CALL_DEPTH

        # Specialized by arity: this is the hot path of recursive programs.
        if len(args) == 1:
            (a0,) = args

            def ev1(fr):
                frame = code.template.copy()
                frame[1] = a0(fr)
                state.depth += 1
                if state.depth > limit:
                    raise too_deep(span)
                result = code.body(frame)
                state.depth -= 1
                return result

            return ev1
        if len(args) == 2:
            a0, a1 = args

            def ev2(fr):
                frame = code.template.copy()
                frame[1] = a0(fr)
                frame[2] = a1(fr)
                state.depth += 1
                if state.depth > limit:
                    raise too_deep(span)
                result = code.body(frame)
                state.depth -= 1
                return result

            return ev2
        end = len(args) + 1

        def ev(fr):
            frame = code.template.copy()
            frame[1:end] = [a(fr) for a in args]
            state.depth += 1
            if state.depth > limit:
                raise too_deep(span)
            result = code.body(frame)
            state.depth -= 1
            return result

        return ev

    def _closure_call(self, call, ctx):
        callee = self.expr(call.op, ctx)
        callee_type = _type(call.op)
        params = callee_type.arg_types if isinstance(callee_type, FuncType) else ()
        args = [self.expr_as(a, t, ctx) for a, t in zip(call.args, _padded(params, len(call.args)))]
        ret_type = getattr(call, "checked_type_", None)
        state = self.state
        interp = self.interp
        span = call.span
        limit = MAX_CALL_DEPTH
        count = len(args)

        def ev(fr):
            f = callee(fr)
            values = [a(fr) for a in args]
            if type(f) is Closure:
                code = f.code
                if code.arity != count:
                    raise EvaluationError(f"{code.name} takes {code.arity} argument(s), got {count}", span)
                frame = code.template.copy()
                frame[0] = f.env
                frame[1 : count + 1] = values
                state.depth += 1
                if state.depth > limit:
                    raise too_deep(span)
                result = code.body(frame)
                state.depth -= 1
                return result
            return interp.apply_value(f, values, ret_type, span)

        return ev

    # ----- match -------------------------------------------------------------------------------
    def _match(self, match, ctx):
        data = self.expr(match.data, ctx)
        clauses = [(self._pattern(c.lhs, ctx), self.expr(c.rhs, ctx)) for c in match.clauses]
        span = match.span
        where = _location(span)

        def ev(fr):
            value = data(fr)
            for matches, rhs in clauses:
                if matches(value, fr):
                    return rhs(fr)
            raise EvaluationError(f"no clause of match at {where} matched value {short_value(value)}", span)

        return ev

    def _pattern(self, pattern, ctx):
        """A function (value, frame) -> bool that binds the pattern's variables into the frame."""
        if isinstance(pattern, E.PatternWildcard):
            return lambda value, fr: True
        if isinstance(pattern, E.PatternVar):
            slot = ctx.scope.declare(pattern.var)

            def bind(value, fr):
                fr[slot] = value
                return True

            return bind
        if isinstance(pattern, E.PatternConstructor):
            name = pattern.constructor.name_hint
            subs = self._subpatterns(pattern.patterns, ctx)
            if not subs:
                return lambda value, fr: value.constructor == name

            def match_ctor(value, fr):
                if value.constructor != name:
                    return False
                fields = value.fields
                for index, slot, sub in subs:
                    if sub is None:
                        fr[slot] = fields[index]
                    elif not sub(fields[index], fr):
                        return False
                return True

            return match_ctor
        if isinstance(pattern, E.PatternTuple):
            subs = self._subpatterns(pattern.patterns, ctx)

            def match_tuple(value, fr):
                for index, slot, sub in subs:
                    if sub is None:
                        fr[slot] = value[index]
                    elif not sub(value[index], fr):
                        return False
                return True

            return match_tuple
        raise EvaluationError(f"unknown pattern {type(pattern).__name__}", pattern.span)

    def _subpatterns(self, patterns, ctx):
        """(field index, slot for a variable, matcher for anything else); wildcards are skipped."""
        subs = []
        for index, sub in enumerate(patterns):
            if isinstance(sub, E.PatternWildcard):
                continue
            if isinstance(sub, E.PatternVar):
                subs.append((index, ctx.scope.declare(sub.var), None))
            else:
                subs.append((index, 0, self._pattern(sub, ctx)))
        return subs


def _padded(types, count: int) -> list:
    """`types` cut or padded with None to `count` entries (an arity mismatch is reported elsewhere)."""
    return (list(types) + [None] * count)[:count]


def _type(node):
    ty = getattr(node, "checked_type_", None)
    return ty if ty is not None else getattr(node, "type_annotation", None)


def _unknown_op(name: str, span) -> EvaluationError:
    return EvaluationError(f"operator {name} is not in the operator registry: the interpreter cannot run it", span)


def _result_normalizer(out_type, name: str, span):
    """Checks an operator's numpy result against the call's type (dtype coerced, shape must agree)."""
    if isinstance(out_type, TensorType):
        dtype = np.dtype(out_type.dtype)
        shape = out_type.shape
        static = not any(isinstance(d, AnyDim) for d in shape)
        ndim = len(shape)

        def finish(result):
            if type(result) is not np.ndarray:
                result = np.asarray(result)
            if result.dtype != dtype:
                result = result.astype(dtype)
            if (result.shape != shape) if static else (result.ndim != ndim):
                raise EvaluationError(
                    f"operator {name} produced an array of shape {result.shape} but its type says {shape}", span
                )
            return result

        return finish
    if isinstance(out_type, TupleType):
        fields = [_result_normalizer(t, name, span) for t in out_type.fields]

        def finish_tuple(result):
            if len(result) != len(fields):
                raise EvaluationError(
                    f"operator {name} produced {len(result)} outputs but its type has {len(fields)}", span
                )
            return tuple([f(r) for f, r in zip(fields, result)])

        return finish_tuple

    def finish_any(result):
        if isinstance(result, np.generic):
            return np.asarray(result)
        if isinstance(result, list):
            return tuple(result)
        return result

    return finish_any
