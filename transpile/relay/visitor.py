"""Generic expression traversal: a memoizing visitor and a rebuilding mutator (as in tvm.relay)."""

from __future__ import annotations

from . import expr as E

__all__ = ["ExprVisitor", "ExprMutator"]


class ExprVisitor:
    """Visits every sub-expression once; override `visit_<node>` methods (e.g. `visit_call`)."""

    def __init__(self):
        self._visited: set[int] = set()

    def visit(self, expr):
        if id(expr) in self._visited and not isinstance(expr, (E.Op, E.GlobalVar, E.Constructor)):
            return
        self._visited.add(id(expr))
        return getattr(self, "visit_" + _snake(type(expr).__name__))(expr)

    def visit_var(self, v):
        pass

    def visit_global_var(self, gv):
        pass

    def visit_constant(self, c):
        pass

    def visit_op(self, op):
        pass

    def visit_constructor(self, c):
        pass

    def visit_tuple(self, t):
        for f in t.fields:
            self.visit(f)

    def visit_tuple_get_item(self, t):
        self.visit(t.tuple_value)

    def visit_call(self, call):
        self.visit(call.op)
        for a in call.args:
            self.visit(a)

    def visit_let(self, let):
        # Iterative over let chains: long `let` sequences must not exhaust the stack.
        while isinstance(let, E.Let):
            self._visited.add(id(let))
            self.visit(let.var)
            self.visit(let.value)
            let = let.body
        self.visit(let)

    def visit_if(self, i):
        self.visit(i.cond)
        self.visit(i.true_branch)
        self.visit(i.false_branch)

    def visit_function(self, f):
        for p in f.params:
            self.visit(p)
        self.visit(f.body)

    def visit_match(self, m):
        self.visit(m.data)
        for clause in m.clauses:
            self.visit_pattern(clause.lhs)
            self.visit(clause.rhs)

    def visit_pattern(self, p):
        if isinstance(p, E.PatternVar):
            self.visit(p.var)
        elif isinstance(p, (E.PatternConstructor, E.PatternTuple)):
            for sub in p.patterns:
                self.visit_pattern(sub)

    def visit_ref_create(self, r):
        self.visit(r.value)

    def visit_ref_read(self, r):
        self.visit(r.ref)

    def visit_ref_write(self, r):
        self.visit(r.ref)
        self.visit(r.value)


class ExprMutator:
    """Rebuilds an expression bottom-up, sharing unchanged nodes and memoizing by identity."""

    def __init__(self):
        self.memo: dict[int, E.Expr] = {}

    def visit(self, expr):
        key = id(expr)
        if key in self.memo:
            return self.memo[key]
        result = getattr(self, "visit_" + _snake(type(expr).__name__))(expr)
        self.memo[key] = result
        return result

    def visit_var(self, v):
        return v

    def visit_global_var(self, gv):
        return gv

    def visit_constant(self, c):
        return c

    def visit_op(self, op):
        return op

    def visit_constructor(self, c):
        return c

    def visit_tuple(self, t):
        fields = [self.visit(f) for f in t.fields]
        return t if _same(fields, t.fields) else E.Tuple(fields, t.span)

    def visit_tuple_get_item(self, t):
        value = self.visit(t.tuple_value)
        return t if value is t.tuple_value else E.TupleGetItem(value, t.index, t.span)

    def visit_call(self, call):
        op = self.visit(call.op)
        args = [self.visit(a) for a in call.args]
        if op is call.op and _same(args, call.args):
            return call
        return E.Call(op, args, call.attrs, call.type_args, call.span)

    def visit_let(self, let):
        chain = []
        node = let
        while isinstance(node, E.Let) and id(node) not in self.memo:
            chain.append((node, self.visit(node.var), self.visit(node.value)))
            node = node.body
        body = self.visit(node)
        for original, new_var, new_value in reversed(chain):
            if new_var is original.var and new_value is original.value and body is original.body:
                rebuilt = original
            else:
                rebuilt = E.Let(new_var, new_value, body, original.span)
            self.memo[id(original)] = rebuilt
            body = rebuilt
        return body

    def visit_if(self, i):
        c, t, f = self.visit(i.cond), self.visit(i.true_branch), self.visit(i.false_branch)
        if c is i.cond and t is i.true_branch and f is i.false_branch:
            return i
        return E.If(c, t, f, i.span)

    def visit_function(self, f):
        params = [self.visit(p) for p in f.params]
        body = self.visit(f.body)
        if _same(params, f.params) and body is f.body:
            return f
        return E.Function(params, body, f.ret_type, f.type_params, f.attrs, f.span)

    def visit_pattern(self, p):
        return p

    def visit_match(self, m):
        data = self.visit(m.data)
        clauses = []
        changed = data is not m.data
        for clause in m.clauses:
            lhs = self.visit_pattern(clause.lhs)
            rhs = self.visit(clause.rhs)
            changed |= lhs is not clause.lhs or rhs is not clause.rhs
            clauses.append(E.Clause(lhs, rhs, clause.span) if changed else clause)
        return E.Match(data, clauses, m.complete, m.span) if changed else m

    def visit_ref_create(self, r):
        v = self.visit(r.value)
        return r if v is r.value else E.RefCreate(v, r.span)

    def visit_ref_read(self, r):
        v = self.visit(r.ref)
        return r if v is r.ref else E.RefRead(v, r.span)

    def visit_ref_write(self, r):
        ref, v = self.visit(r.ref), self.visit(r.value)
        return r if ref is r.ref and v is r.value else E.RefWrite(ref, v, r.span)


def _same(new, old) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


_snake_cache: dict[str, str] = {}


def _snake(name: str) -> str:
    cached = _snake_cache.get(name)
    if cached is None:
        out = []
        for i, ch in enumerate(name):
            if ch.isupper() and i:
                out.append("_")
            out.append(ch.lower())
        cached = _snake_cache[name] = "".join(out)
    return cached
