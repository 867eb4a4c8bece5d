"""A-normal form: every function body becomes a chain of `let`s whose values take only atoms.

Output contract (later passes rely on it exactly):
- ATOMS: Var, GlobalVar, Constant, Constructor (unapplied), and Op only as a callee.
- VALUES (the only things bound by a `let`): Call(atom callee, atom args) — a Function literal
  callee is let-bound first —, Tuple(atoms), TupleGetItem(atom), If(atom, body, body),
  Match(atom, clauses with body right-hand sides), Function(params, body), RefCreate(atom),
  RefRead(atom), RefWrite(atom, atom).
- A body (function body, If branch, Match clause) is `let v1 = value1; ... let vn = valuen; atom`.
  Atoms are never let-bound: `let %x = %y; e` is replaced by e with %x := %y.
- Evaluation order is kept: a callee before its arguments, arguments/fields left to right, a
  let's value before its body, an If/Match scrutinee before the branch.
- Sharing (a graph binding `%0` used twice is the same Expr object): the node is bound once in
  each of the *minimal scopes* where its users are evaluated. Scopes are function bodies, If
  branches and Match clauses. A node used directly in scope S and also inside a branch nested in
  S is bound once in S (when first reached, so possibly just before the If/Match holding the
  branch); a node used only inside sibling branches (or sibling lambdas) is bound separately in
  each, so it is never evaluated on a path that did not evaluate it before, never hoisted out of
  a function body, and evaluated at most once per path.
- Fresh let vars are named `t0`, `t1`, ... per global function; user let vars keep their Var.
- Every new node gets `checked_type_` copied from the node it replaces (calls keep
  `inferred_type_args_`), so the output is typed; it also re-type-checks with InferType.
Linear in the size of the program; iterative over let chains; recursive passes run on the
big-stack thread (`deep_recursion`) for 1 500-deep nested call chains.
"""

from __future__ import annotations

from ..relay import expr as E
from ..relay.deep import deep_recursion
from ..relay.module import IRModule

__all__ = ["to_anf", "to_anf_expr", "ATOM_TYPES", "is_atom"]

ATOM_TYPES = (E.Var, E.GlobalVar, E.Constant, E.Constructor, E.Op)


def is_atom(expr) -> bool:
    return isinstance(expr, ATOM_TYPES)


@deep_recursion
def to_anf(mod: IRModule) -> IRModule:
    """A copy of `mod` whose every function (global and nested) is in A-normal form."""
    out = mod.copy()
    for gv, func in mod.functions.items():
        out.functions[gv] = _Converter().function(func)
    return out


@deep_recursion
def to_anf_expr(expr: E.Expr) -> E.Expr:
    """`expr` in A-normal form (a Function stays a Function with an ANF body)."""
    converter = _Converter()
    if isinstance(expr, E.Function):
        return converter.function(expr)
    return converter.body(expr)


def _typed(node, like):
    ty = getattr(like, "checked_type_", None)
    if ty is not None:
        node._set_checked_type(ty)
    return node


def make_let_chain(bindings, result, like=None):
    """`let v1 = e1; ... result`, typed (each Let has the type of `like`, else of `result`)."""
    ty = getattr(like if like is not None else result, "checked_type_", None)
    for var, value in reversed(bindings):
        result = E.Let(var, value, result)
        if ty is not None:
            result._set_checked_type(ty)
    return result


# ----- placement analysis ----------------------------------------------------------------------
# A scope key is ("root",) or (id(node), index) for branch `index` of an If/Match/Function node.
_ROOT = ("root",)


def _edges(node):
    """(child, branch index or None) for every sub-expression, in evaluation order.

    A branch index marks a child evaluated in a new scope (If branches, Match clauses, Function
    bodies); None means the child is evaluated in the node's own scope.
    """
    kind = type(node)
    if kind is E.Call:
        return [(node.op, None)] + [(a, None) for a in node.args]
    if kind is E.Let:
        return [(node.value, None), (node.body, None)]
    if kind is E.Tuple:
        return [(f, None) for f in node.fields]
    if kind is E.TupleGetItem:
        return [(node.tuple_value, None)]
    if kind is E.If:
        return [(node.cond, None), (node.true_branch, 1), (node.false_branch, 2)]
    if kind is E.Match:
        return [(node.data, None)] + [(c.rhs, i) for i, c in enumerate(node.clauses)]
    if kind is E.Function:
        return [(node.body, 0)]
    if kind is E.RefCreate:
        return [(node.value, None)]
    if kind is E.RefRead:
        return [(node.ref, None)]
    if kind is E.RefWrite:
        return [(node.ref, None), (node.value, None)]
    return []


class _Placement:
    """For every non-atom node of one function body, the minimal scopes its users live in."""

    def __init__(self, body):
        self.placement: dict[int, tuple] = {}
        self.scope_parents: dict[tuple, tuple] = {_ROOT: ()}
        order = self._topological(body)
        uses: dict[int, list] = {id(body): [_ROOT]}
        for node in order:
            scopes = self._minimal(uses.pop(id(node)))
            self.placement[id(node)] = scopes
            for child, branch in _edges(node):
                if isinstance(child, ATOM_TYPES):
                    continue
                if branch is None:
                    targets = scopes
                else:
                    key = (id(node), branch)
                    self.scope_parents[key] = scopes
                    targets = (key,)
                bucket = uses.setdefault(id(child), [])
                for t in targets:
                    if t not in bucket:
                        bucket.append(t)

    @staticmethod
    def _topological(body):
        """Non-atom nodes, every node after all the nodes that use it."""
        post = []
        seen = {id(body)}
        stack = [(body, iter(_edges(body)))]
        while stack:
            node, children = stack[-1]
            for child, _ in children:
                if isinstance(child, ATOM_TYPES) or id(child) in seen:
                    continue
                seen.add(id(child))
                stack.append((child, iter(_edges(child))))
                break
            else:
                stack.pop()
                post.append(node)
        post.reverse()
        return post

    def _minimal(self, scopes):
        if len(scopes) == 1:
            return tuple(scopes)
        return tuple(s for s in scopes if not any(o != s and self._is_ancestor(o, s) for o in scopes))

    def _is_ancestor(self, outer, inner) -> bool:
        stack = list(self.scope_parents.get(inner, ()))
        seen = set()
        while stack:
            s = stack.pop()
            if s == outer:
                return True
            if s not in seen:
                seen.add(s)
                stack.extend(self.scope_parents.get(s, ()))
        return False


class _Frame:
    """A scope being converted: its pending bindings and the atoms of nodes bound in it."""

    __slots__ = ("key", "bindings", "atoms")

    def __init__(self, key):
        self.key = key
        self.bindings: list = []
        self.atoms: dict[int, E.Expr] = {}


class _Converter:
    def __init__(self):
        self.counter = 0
        self.placement: _Placement | None = None
        self.frames: list[_Frame] = []
        self.aliases: dict[E.Var, E.Expr] = {}  # `let %x = atom` removed: %x -> atom

    def fresh(self, like) -> E.Var:
        var = E.Var(f"t{self.counter}")
        self.counter += 1
        return _typed(var, like)

    # ----- entry points ------------------------------------------------------------------------
    def function(self, func: E.Function) -> E.Function:
        self.placement = _Placement(func)
        self.frames = [_Frame(_ROOT)]
        return self.value(func)

    def body(self, expr: E.Expr) -> E.Expr:
        self.placement = _Placement(expr)
        self.frames = [_Frame(_ROOT)]
        return make_let_chain(self.frames[0].bindings, self.atom(expr), expr)

    # ----- scopes ------------------------------------------------------------------------------
    def scoped_body(self, key, expr) -> E.Expr:
        self.frames.append(_Frame(key))
        try:
            result = self.atom(expr)
            return make_let_chain(self.frames[-1].bindings, result, expr)
        finally:
            self.frames.pop()

    def home_frame(self, node) -> _Frame:
        """The open frame where `node` is bound: its innermost placement scope on the stack."""
        scopes = self.placement.placement.get(id(node), ())
        for frame in reversed(self.frames):
            if frame.key in scopes:
                return frame
        return self.frames[-1]  # a node reached in a context the analysis did not foresee

    def _enter(self, frame):
        """Makes `frame` the innermost frame (binding in an enclosing scope); returns the old stack."""
        saved = self.frames
        if frame is not saved[-1]:
            self.frames = saved[: saved.index(frame) + 1]
        return saved

    # ----- conversion --------------------------------------------------------------------------
    def atom(self, node) -> E.Expr:
        """An atom holding the value of `node`, binding what must be bound."""
        if isinstance(node, ATOM_TYPES):
            return self.aliases.get(node, node) if type(node) is E.Var else node
        frame = self.home_frame(node)
        known = frame.atoms.get(id(node))
        if known is not None:
            return known
        saved = self._enter(frame)
        try:
            if type(node) is E.Let:
                return self.let_chain(node, frame)
            value = self.value(node)
            var = self.fresh(node)
            frame.bindings.append((var, value))
            frame.atoms[id(node)] = var
            return var
        finally:
            self.frames = saved

    def let_chain(self, let, frame) -> E.Expr:
        """Flattens a let chain into `frame` (the innermost frame), iteratively; returns its atom."""
        chain = []
        node = let
        while type(node) is E.Let and id(node) not in frame.atoms:
            chain.append(node)
            value = node.value
            if isinstance(value, ATOM_TYPES):
                self.aliases[node.var] = self.atom(value)
            else:
                home = self.home_frame(value)
                known = home.atoms.get(id(value))
                if known is not None:
                    self.aliases[node.var] = known
                elif home is frame and type(value) is not E.Let:
                    # bind the value to the user's own let var (also the name a recursive
                    # function literal uses for itself)
                    converted = self.value(value)
                    frame.bindings.append((node.var, converted))
                    frame.atoms[id(value)] = node.var
                else:
                    self.aliases[node.var] = self.atom(value)
            node = node.body
        result = self.atom(node)
        for inner in chain:
            frame.atoms[id(inner)] = result
        return result

    def value(self, node) -> E.Expr:
        """`node` rebuilt as a let-bindable value over atoms (sub-expressions bound first)."""
        kind = type(node)
        if kind is E.Call:
            callee = node.op
            callee_atom = callee if isinstance(callee, E.Op) else self.atom(callee)
            args = [self.atom(a) for a in node.args]
            new = E.Call(callee_atom, args, node.attrs, node.type_args, node.span)
            if hasattr(node, "inferred_type_args_"):
                object.__setattr__(new, "inferred_type_args_", node.inferred_type_args_)
            return _typed(new, node)
        if kind is E.Tuple:
            return _typed(E.Tuple([self.atom(f) for f in node.fields], node.span), node)
        if kind is E.TupleGetItem:
            return _typed(E.TupleGetItem(self.atom(node.tuple_value), node.index, node.span), node)
        if kind is E.If:
            cond = self.atom(node.cond)
            then = self.scoped_body((id(node), 1), node.true_branch)
            other = self.scoped_body((id(node), 2), node.false_branch)
            return _typed(E.If(cond, then, other, node.span), node)
        if kind is E.Match:
            data = self.atom(node.data)
            clauses = [
                E.Clause(c.lhs, self.scoped_body((id(node), i), c.rhs), c.span) for i, c in enumerate(node.clauses)
            ]
            return _typed(E.Match(data, clauses, node.complete, node.span), node)
        if kind is E.Function:
            body = self.scoped_body((id(node), 0), node.body)
            return _typed(E.Function(node.params, body, node.ret_type, node.type_params, node.attrs, node.span), node)
        if kind is E.RefCreate:
            return _typed(E.RefCreate(self.atom(node.value), node.span), node)
        if kind is E.RefRead:
            return _typed(E.RefRead(self.atom(node.ref), node.span), node)
        if kind is E.RefWrite:
            ref = self.atom(node.ref)
            return _typed(E.RefWrite(ref, self.atom(node.value), node.span), node)
        raise TypeError(f"to_anf: unexpected node {kind.__name__}")
