"""The Relay text printer proper: modules, functions and expressions in TVM's 0.0.5 layout.

Layout rules follow TVM's RelayTextPrinter: variables, globals, operators, constructors and
constants are always written inline; every other argument of a call, tuple, projection, `if`
condition, `match` scrutinee or reference operation gets a graph binding `%N = ...;`; the result
of a scope (function body, branch, clause, let body) and a let-bound value are written inline
when used only once. Temporaries are numbered in TVM's order (post-order, see `Printer.prepare`)
and names are unique across the whole printout (`%x`, `%x1`, ...), as TVM's were. Bindings made
inside a nested scope are forgotten when it closes, so a node shared across scopes is re-printed
where needed instead of referring to an out-of-scope `%N` (TVM's printer got that case wrong).
"""

from __future__ import annotations

from ..expr import (
    Call,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from .info import DEFAULT_INFO_KINDS, annotation_comment, span_text
from .names import bare_name, global_name
from .types import TypePrinter
from .values import MetaTable, attr_value_text, printed_defaults, same_attr_value, scalar_literal

__all__ = ["Printer", "flatten"]

_INDENT = "  "


def _children(e):
    """Sub-expressions whose uses decide inlining (TVM's dependency graph edges)."""
    if isinstance(e, Call):
        return (e.op, *e.args)
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    if isinstance(e, Let):
        return (e.value, e.body)
    if isinstance(e, If):
        return (e.cond, e.true_branch, e.false_branch)
    if isinstance(e, Function):
        return (e.body,)
    if isinstance(e, Match):
        return (e.data, *(c.rhs for c in e.clauses))
    if isinstance(e, RefCreate):
        return (e.value,)
    if isinstance(e, RefRead):
        return (e.ref,)
    if isinstance(e, RefWrite):
        return (e.ref, e.value)
    return ()


_ATOMS = (Var, GlobalVar, Op, Constructor, Constant)


def flatten(doc) -> str:
    """Join a text tree: multi-line constructs are nested lists of fragments, so nested scopes are
    never re-copied while printing (deeply nested ifs or lets would otherwise cost quadratic time)."""
    if isinstance(doc, str):
        return doc
    parts: list[str] = []
    stack = [iter(doc)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, str):
                parts.append(item)
            else:
                stack.append(iter(item))
                break
        else:
            stack.pop()
    return "".join(parts)


def _is_name_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


def _local_name_text(hint: str) -> str:
    """A name hint as a local name the lexer reads back: ASCII letters, digits, `_`, and `/` between them."""
    chars = [ch if _is_name_char(ch) else "_" for ch in hint]
    for i, ch in enumerate(hint):
        if ch == "/" and i > 0 and i + 1 < len(hint) and _is_name_char(hint[i + 1]):
            chars[i] = "/"
    return "".join(chars)



def _always_printed(op_name: str) -> tuple:
    from ..op.registry import lookup

    opdef = lookup(op_name)
    return tuple(opdef.extras.get("always_print", ())) if opdef is not None else ()

class Printer:
    """One printing session: shared name allocation, temp counter and meta table (as in TVM).

    `show_types` and `show_spans` add TVM's `/* ty=T span=S */` comments; `annotate` (a callback
    node -> str, as in TVM's `astext(annotate=...)`) replaces them with the callback's text.
    """

    def __init__(self, show_types: bool = False, annotate=None, show_spans: bool = False):
        self.show_types = show_types
        self.show_spans = show_spans
        self.annotate = annotate
        self._info: dict = {}
        self.meta = MetaTable()
        self.types = TypePrinter()
        self._name_counters: dict[str, int] = {}
        self._var_names: dict[Var, str] = {}
        self._shadowed: list[tuple[Var, str]] = []
        self._temp = 0
        self._uses: dict = {}
        self._memo: dict = {}
        self._prepared: dict = {}
        self._scope_memo: list[list] = []
        self._lines: list[str] = []
        self._depth = 0

    # ----- names ---------------------------------------------------------------------------------
    def _unique(self, prefix: str) -> str:
        # TVM's GetUniqueName: the first `%x` keeps its name, later ones become `%x1`, `%x2`, ...
        name = prefix
        if prefix in self._name_counters:
            while True:
                self._name_counters[prefix] += 1
                name = f"{prefix}{self._name_counters[prefix]}"
                if name not in self._name_counters:
                    break
        self._name_counters[name] = 0
        return name

    def bind_var(self, var: Var) -> str:
        """Allocate a binder's name; returns its defining text (`%x: T`)."""
        hint = _local_name_text(var.name_hint or "")
        if not (hint and hint[0].isalpha()):
            hint = "v" + hint
        name = self._unique("%" + hint)
        previous = self._var_names.get(var)
        if previous is not None:  # the same Var object bound again (builders reuse vars)
            self._shadowed.append((var, previous))
        self._var_names[var] = name
        text = name
        if var.type_annotation is not None:
            text += ": " + self.types(var.type_annotation)
        return text + self.optional_info(var)

    def var_ref(self, var: Var) -> str:
        name = self._var_names.get(var)
        if name is None:  # free variable (or ill-scoped IR): name it on first sight
            self.bind_var(var)
            name = self._var_names[var]
        return name

    def _unshadow(self, mark: int) -> None:
        """Leaving a binder's scope: a Var bound again inside it gets its outer name back."""
        while len(self._shadowed) > mark:
            var, previous = self._shadowed.pop()
            self._var_names[var] = previous

    def optional_info(self, e) -> str:
        """The comment after a node: computed once per node (the callback runs once, as in TVM)."""
        if self.annotate is None and not (self.show_types or self.show_spans):
            return ""
        text = self._info.get(e)
        if text is None:
            text = self._info[e] = self._make_info(e)
        return text

    def _make_info(self, e) -> str:
        if self.annotate is not None:
            return annotation_comment(self.annotate(e))
        if not isinstance(e, DEFAULT_INFO_KINDS):
            return ""
        parts = []
        ty = getattr(e, "checked_type_", None) if self.show_types else None
        if ty is not None:
            parts.append(f"ty={self.types(ty)}")
        span = span_text(getattr(e, "span", None)) if self.show_spans else None
        if span is not None:
            parts.append(f"span={span}")
        return f" /* {' '.join(parts)} */" if parts else ""

    # ----- dependency counting -------------------------------------------------------------------
    def count_uses(self, root) -> None:
        uses: dict = {}
        seen: set[int] = set()
        stack = [root]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            for child in _children(node):
                if isinstance(child, _ATOMS):
                    continue
                uses[child] = uses.get(child, 0) + 1
                stack.append(child)
        self._uses = uses

    # ----- scopes --------------------------------------------------------------------------------
    def block(self, e, depth: int, prelude=()) -> list:
        """The statements and result of one scope, each line indented to `depth`."""
        saved = (self._lines, self._depth)
        self._lines, self._depth = list(prelude), depth
        self._scope_memo.append([])
        mark = len(self._shadowed)
        try:
            let_infos = []  # a let's own comment goes after its result, where TVM put it
            while isinstance(e, Let) and e not in self._memo:
                binder = self.bind_var(e.var)
                value = self.expr(e.value, try_inline=True)
                self._lines.append(["let ", binder, " = ", value, ";"])
                let_infos.append(self.optional_info(e))
                e = e.body
            lines = self._lines
            lines.append([self.expr(e, try_inline=True), *reversed(let_infos)])
        finally:
            for node in self._scope_memo.pop():
                self._memo.pop(node, None)
            self._unshadow(mark)
            self._lines, self._depth = saved
        pad = _INDENT * depth
        doc: list = []
        for line in lines:
            doc += ["\n", pad, line]
        return doc[1:]

    def braced(self, e) -> list:
        return ["{\n", self.block(e, self._depth + 1), "\n", _INDENT * self._depth, "}"]

    # ----- expressions ---------------------------------------------------------------------------
    def expr(self, e, try_inline: bool = False) -> str:
        if isinstance(e, Var):
            return self.var_ref(e)
        if isinstance(e, GlobalVar):
            return global_name(e.name_hint) + self.optional_info(e)
        if isinstance(e, Op):
            return e.name + self.optional_info(e)
        if isinstance(e, Constructor):
            return bare_name(e.name_hint) + self.optional_info(e)
        if isinstance(e, Constant):
            return self.constant(e) + self.optional_info(e)
        known = self._memo.get(e)
        if known is not None:
            return known
        inline = try_inline and self._uses.get(e, 0) <= 1
        text = self._prepared.pop(e, None)
        if text is None:
            text = self._compound(e)
        info = self.optional_info(e)
        if info:
            text = [text, info]
        if inline:
            return text
        name = f"%{self._temp}"
        self._temp += 1
        self._lines.append([name, " = ", text, ";"])
        self._memo[e] = name
        self._scope_memo[-1].append(e)
        return name

    def prepare(self, e) -> None:
        """Render a child's own text before any sibling is bound.

        TVM visited dataflow nodes (calls, tuples, projections) in post-order, callee first and
        then arguments left to right, and bound each node only when its parent was visited: so a
        call's arguments get their `%N` after the whole subtree of the last argument is printed.
        Doing the same keeps our numbering (and meta indices) identical to TVM's.
        """
        if isinstance(e, Constant):
            self.constant(e)
        elif not isinstance(e, _ATOMS) and e not in self._memo and e not in self._prepared:
            self._prepared[e] = self._compound(e)

    def constant(self, c: Constant) -> str:
        literal = scalar_literal(c.data)
        return literal if literal is not None else self.meta.constant_ref(c)

    def _compound(self, e) -> str:
        if isinstance(e, Call):
            return self._call(e)
        if isinstance(e, Tuple):
            for field in e.fields:
                self.prepare(field)
            fields = [self.expr(f) for f in e.fields]
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        if isinstance(e, TupleGetItem):
            self.prepare(e.tuple_value)
            return f"{self.expr(e.tuple_value)}.{e.index}"
        if isinstance(e, Let):
            # A let outside a scope's statement position is parenthesized with its own scope.
            return ["(\n", self.block(e, self._depth + 1), "\n", _INDENT * self._depth, ")"]
        if isinstance(e, If):
            cond = self.expr(e.cond)
            return ["if (", cond, ") ", self.braced(e.true_branch), " else ", self.braced(e.false_branch)]
        if isinstance(e, Function):
            return self.function("fn ", e)
        if isinstance(e, Match):
            return self._match(e)
        if isinstance(e, RefCreate):
            return f"ref({self.expr(e.value)})"
        if isinstance(e, RefRead):
            return f"ref_read({self.expr(e.ref)})"
        if isinstance(e, RefWrite):
            ref = self.expr(e.ref)
            return f"ref_write({ref}, {self.expr(e.value)})"
        raise TypeError(f"cannot print {type(e).__name__} as a Relay expression")

    def _call(self, call: Call) -> str:
        op = call.op
        self.prepare(op)
        if isinstance(op, Op) and op.name == "call_lowered" and len(call.args) == 2 and isinstance(call.args[1], Tuple):
            # TVM's traversal looked through call_lowered's argument tuple.
            children = (call.args[0], *call.args[1].fields)
        else:
            children = call.args
        for child in children:
            self.prepare(child)
        # Arguments are bound before the callee (as TVM printed).
        args = [self.expr(a) for a in call.args]
        args.extend(self.call_attrs(call))
        if isinstance(op, Constructor):
            if not args:
                return bare_name(op.name_hint)  # zero-arity constructor: `Nil`
            head = bare_name(op.name_hint)
        else:
            head = self.expr(op)
        return f"{head}({', '.join(args)})"

    def call_attrs(self, call: Call) -> list[str]:
        attrs = call.attrs
        if not attrs:
            return []
        defaults = printed_defaults(call.op.name) if isinstance(call.op, Op) else {}
        # Attributes TVM's attrs struct gave no default (transpose's axes) were printed even when unset.
        always = _always_printed(call.op.name) if isinstance(call.op, Op) else ()
        out = []
        for key, value in attrs.items():
            if key in defaults and key not in always and same_attr_value(value, defaults[key]):
                continue
            out.append(f"{key}={self.attr_value(value)}")
        return out

    def attr_value(self, value) -> str:
        return attr_value_text(value, self.meta, self._attr_object)

    def _attr_object(self, value) -> str:
        if isinstance(value, Constant):
            return self.constant(value)
        if isinstance(value, GlobalVar):
            return global_name(value.name_hint)
        return self.types(value) if hasattr(value, "span") else str(value)

    def function(self, prefix: str, fn: Function) -> list:
        names = self.types.bind(fn.type_params)
        mark = len(self._shadowed)
        try:
            head = prefix + (f"[{', '.join(names)}]" if names else "")
            params = [self.bind_var(p) for p in fn.params]
            params.extend(f"{k}={self.attr_value(v)}" for k, v in (fn.attrs or {}).items())
            text = f"{head}({', '.join(params)}) "
            if fn.ret_type is not None:
                text += f"-> {self.types(fn.ret_type)} "
            return [text, self.braced(fn.body)]
        finally:
            self._unshadow(mark)
            self.types.unbind(fn.type_params)

    def _match(self, m: Match) -> list:
        data = self.expr(m.data)
        pad = _INDENT * (self._depth + 1)
        clauses = []
        for clause in m.clauses:
            mark = len(self._shadowed)
            pattern = self.pattern(clause.lhs)
            rhs = self.block(clause.rhs, self._depth + 2)
            self._unshadow(mark)
            clauses += [pad, pattern, " => {\n", rhs, "\n", pad, "},\n"]
        keyword = "match" if m.complete else "match?"
        return [f"{keyword} ({data}) {{\n", clauses, _INDENT * self._depth, "}"]

    def pattern(self, p) -> str:
        if isinstance(p, PatternWildcard):
            return "_"
        if isinstance(p, PatternVar):
            return self.bind_var(p.var)
        if isinstance(p, PatternConstructor):
            if not p.patterns:
                return bare_name(p.constructor.name_hint)
            return bare_name(p.constructor.name_hint) + "(" + ", ".join(self.pattern(q) for q in p.patterns) + ")"
        if isinstance(p, PatternTuple):
            return "(" + ", ".join(self.pattern(q) for q in p.patterns) + ")"
        raise TypeError(f"cannot print {type(p).__name__} as a pattern")

    # ----- top level -----------------------------------------------------------------------------
    def extern_type(self, data) -> str:
        names = self.types.bind(data.type_vars)
        self.types.unbind(data.type_vars)
        return "extern type " + bare_name(data.header.name_hint) + (f"[{', '.join(names)}]" if names else "")

    def type_data(self, data) -> str:
        names = self.types.bind(data.type_vars)
        try:
            head = "type " + bare_name(data.header.name_hint) + (f"[{', '.join(names)}]" if names else "")
            ctors = []
            for ctor in data.constructors:
                inputs = "(" + ", ".join(self.types(t) for t in ctor.inputs) + ")" if ctor.inputs else ""
                ctors.append(f"{_INDENT}{bare_name(ctor.name_hint)}{inputs},")
        finally:
            self.types.unbind(data.type_vars)
        return head + " {\n" + "".join(line + "\n" for line in ctors) + "}"

    def module(self, mod) -> str:
        items = []
        defined = {gtv.name_hint for gtv in mod.type_definitions}
        for name in mod.extern_types:
            if name not in defined:
                items.append(f"extern type {bare_name(name)}")
        for data in mod.type_definitions.values():
            extern = data.header.name_hint in mod.extern_types and not data.constructors
            items.append(self.extern_type(data) if extern else self.type_data(data))
        for gv, fn in mod.functions.items():
            # Each definition is its own scope: numbering and names restart, as in TVM's output.
            self._temp = 0
            self._name_counters = {}
            self.count_uses(fn)
            items.append(self.function("def " + global_name(gv.name_hint), fn))
        return flatten([[item, "\n" if i + 1 == len(items) else "\n\n"] for i, item in enumerate(items)])

    def root_expr(self, e, free_var_lines: bool = True) -> str:
        """A standalone expression; free variables are declared first with `free_var`."""
        self.count_uses(e)
        prelude = []
        if free_var_lines:
            from ..analysis import free_vars

            prelude = [f"free_var {self.bind_var(v)};" for v in free_vars(e)]
        return flatten(self.block(e, 0, prelude))
