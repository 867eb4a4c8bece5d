"""LIR program -> Python `ast` module: constants, kernels, then one `def` per LIR function.

Reading guide for the output: closures are factories (`make_f(captured)` returns the nested
`def f`); self tail calls are `while True:` loops that rebind the parameters and `continue`;
`match` is an if/elif chain on `value.constructor`; every statement with a source location has
a `# file:line: text` comment above it. Inside the module a 0-d tensor is a numpy scalar (or a
0-d array) of the exact dtype; the artifact's wrapper hands 0-d arrays to callers.
"""

from __future__ import annotations

import ast
import base64
import secrets

import numpy as np

from ...lir.nodes import (
    AdtField,
    AtomValue,
    Block,
    Call,
    ClosureCall,
    ConstRef,
    Fail,
    If,
    KernelCall,
    Let,
    Literal,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Proj,
    RefGet,
    RefNew,
    RefSet,
    Var,
)
from ...lir.types import type_text
from ...lir.walk import atoms_of, sub_blocks
from .kernels import KernelWriter, _value_text, array_literal, dtype_expr, scalar_literal
from .names import Namespace
from .problems import ill_formed
from .pyast import comment, docstring, parse_expr, readable, short_source_name, signature_doc, source_comment

__all__ = ["ModuleWriter", "IMPORTED_NAMES", "INLINE_CONSTANT_LIMIT"]

# Names the generated module imports; reserved even when unused so names never depend on usage.
IMPORTED_NAMES = ("np", "ADTValue", "RefValue", "ops", "EvaluationError", "decode_constant")

INLINE_CONSTANT_LIMIT = 32  # constants with more elements are embedded as base64 bytes


def _tuple_text(items: list[str]) -> str:
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


def _nested_list_text(array: np.ndarray, dtype: str) -> str:
    if array.ndim == 0:
        return _value_text(array.item(), dtype)
    return "[" + ", ".join(_nested_list_text(sub, dtype) for sub in array) + "]"


class ModuleWriter:
    """Builds the `ast.Module` for one LIR program; `entry_name` is the entry function's identifier."""

    def __init__(self, program):
        self.program = program
        self.names = Namespace()
        for name in IMPORTED_NAMES:
            self.names.reserve(name)
        self.kernels = KernelWriter()
        self.uses = set()
        self.blobs: dict[str, str] = {}  # placeholder -> base64 text of a large constant
        self._blob_token = secrets.token_hex(8)
        self._assign_names()

    # ------------------------------------------------------------ names

    def _assign_names(self) -> None:
        names = self.names
        for func in self.program.functions:
            if func.env:  # a closure capturing values: a module-level factory around the nested def
                names.bind(("make", func.name), f"make_{func.name}", "make")
            else:
                names.bind(("fn", func.name), func.name, "f")
        for kernel in self.program.kernels:
            names.bind(("kernel", kernel.name), kernel.name, "k")
        self.kernel_params = _kernel_param_names(self.program)
        for const in self.program.constants:
            names.bind(("const", const.name), const.name, "c")
        if self.program.entry_function.env is not None:
            raise ill_formed(
                f"the entry @{self.program.entry} is a closure body; it must be a plain function",
                self.program.entry_function.span,
            )
        self.entry_name = names.lookup(("fn", self.program.entry))

    # ------------------------------------------------------------ module

    def module(self) -> ast.Module:
        program = self.program
        body: list[ast.stmt] = []
        inline = [c for c in program.constants if self._is_inline(c)]
        embedded = [c for c in program.constants if not self._is_inline(c)]
        if inline:
            body.append(comment(""))
            body.append(comment("Constants", section=True))
            body.extend(self._constant(c) for c in inline)
        if program.kernels:
            body.append(comment(""))
            body.append(comment("Kernels: fused groups of Relay operators, written with numpy", section=True))
            for kernel in program.kernels:
                py_name = self.names.lookup(("kernel", kernel.name))
                body.append(self.kernels.function(kernel, py_name, self.kernel_params.get(kernel.name)))
        body.append(comment(""))
        body.append(comment("Functions", section=True))
        body.append(comment(""))
        for func in program.functions:
            note = source_comment(func.span)
            if note:
                body.append(comment(note))
            writer = FunctionWriter(self, func)
            writer.last_comment = note  # the def's own line is not repeated inside it
            body.append(writer.definition())
        if embedded:
            # Functions only read constants when called, so the bulky data can come last.
            body.append(comment(""))
            body.append(comment("Large constants: raw little-endian bytes, base64-encoded", section=True))
            body.extend(self._constant(c) for c in embedded)
        if self.kernels.uses_ops:
            self.uses.add("ops")
        header = [docstring(self._docstring())] + self._imports()
        return ast.Module(body=header + body, type_ignores=[])

    def _docstring(self) -> str:
        program = self.program
        entry = program.entry_function
        source = short_source_name(entry.span.source_name) if entry.span is not None else None
        origin = f" from {readable(source)}" if source else ""
        params = [f"{readable(p.name)}: {_type_text(p.type)}" for p in entry.params]
        lines = [
            f"Generated by transpile{origin}; do not edit.",
            "",
            signature_doc(f"Entry point: {self.entry_name}", params, _type_text(entry.ret)).rstrip("\n"),
        ]
        if program.adts:
            lines += ["", "ADT values are transpile.runtime.ADTValue(constructor, fields):"]
            for adt in program.adts:
                ctors = []
                for ctor in adt.constructors:
                    fields = ", ".join(_type_text(t) for t in ctor.fields)
                    ctor_name = readable(ctor.relay_name)
                    ctors.append(f"{ctor_name}({fields})" if ctor.fields else ctor_name)
                lines.append(f"    {readable(adt.name)} = {' | '.join(ctors)}")
        return "\n".join(lines) + "\n"

    def _imports(self) -> list[ast.stmt]:
        out: list[ast.stmt] = [ast.Import(names=[ast.alias(name="numpy", asname="np")])]
        runtime = [n for n in ("ADTValue", "RefValue", "ops") if n in self.uses]
        if runtime:
            out.append(ast.ImportFrom(module="transpile.runtime", names=[ast.alias(name=n) for n in runtime], level=0))
        support = [n for n in ("EvaluationError", "decode_constant") if n in self.uses]
        if support:
            out.append(
                ast.ImportFrom(
                    module="transpile.runtime.python_support", names=[ast.alias(name=n) for n in support], level=0
                )
            )
        return out

    def _is_inline(self, const) -> bool:
        return const.value.size <= INLINE_CONSTANT_LIMIT and const.value.dtype.name in _LITERAL_DTYPES

    def _constant(self, const) -> ast.stmt:
        """`c0 = np.array([...], dtype=...)` for small constants; large ones decode embedded bytes.

        The bytes of a large constant are not put into the tree (black would take minutes on
        megabytes of text): the string is a placeholder `render` swaps for the base64 text.
        """
        value = np.asarray(const.value, order="C")  # (np.ascontiguousarray makes a 0-d array 1-d)
        dtype = value.dtype.name
        target = self.names.lookup(("const", const.name))
        if self._is_inline(const):
            if value.ndim == 0:
                text = array_literal(value.item(), dtype)
            else:
                text = f"np.array({_nested_list_text(value, dtype)}, dtype={dtype_expr(dtype)})"
        else:
            self.uses.add("decode_constant")
            data = base64.b64encode(value.astype(value.dtype.newbyteorder("<"), copy=False).tobytes()).decode("ascii")
            placeholder = f"__transpile_blob_{len(self.blobs)}_{self._blob_token}__"
            self.blobs[placeholder] = data
            shape = tuple(int(d) for d in value.shape)
            text = f"decode_constant({dtype!r}, {shape!r}, {placeholder!r})"
        return ast.Assign(targets=[ast.Name(target, ast.Store())], value=parse_expr(text))


_LITERAL_DTYPES = frozenset(
    ["bool", "float16", "float32", "float64"] + [f"{k}{b}" for k in ("int", "uint") for b in (8, 16, 32, 64)]
)


class FunctionWriter:
    """One LIR FunctionDef as a `def` (or, for a closure with captured values, its factory)."""

    def __init__(self, module: ModuleWriter, func):
        self.module = module
        self.program = module.program
        self.func = func
        scope = module.names.child()
        if func.env:
            # The nested def is named in the factory's scope: it must only avoid module-level names.
            self.name = scope.fresh(func.name, "f")
        else:
            self.name = module.names.lookup(("fn", func.name))
        self.locals = scope
        self.loops = False
        self.last_comment = None
        self.span = func.span  # of the statement being written: where a translation error points
        self.used = _used_names(func.body)
        self.env_names = [self.locals.bind(p.name, p.name) for p in (func.env or ())]
        self.param_names = [self.locals.bind(p.name, p.name) for p in func.params]

    # ------------------------------------------------------------ definitions

    def definition(self) -> ast.FunctionDef:
        func = self.func
        name = self.name
        body = self.block(func.body, None)
        if self.loops:
            body = [ast.While(test=ast.Constant(True), body=body, orelse=[])]
        inner = _function_def(name, self.param_names, [docstring(self._docstring())] + body)
        if not func.env:
            return inner
        factory = self.module.names.lookup(("make", func.name))
        doc = f"The closure {name}, capturing {', '.join(self.env_names)}."
        return _function_def(
            factory,
            self.env_names,
            [docstring(doc), inner, ast.Return(ast.Name(name, ast.Load()))],
        )

    def _docstring(self) -> str:
        func = self.func
        params = [f"%{readable(p.name)}: {_type_text(p.type)}" for p in func.params]
        note = f"  (from @{readable(func.relay_name)})" if func.relay_name and func.relay_name != func.name else ""
        return signature_doc(f"fn @{readable(func.name)}", params, _type_text(func.ret), note)

    # ------------------------------------------------------------ blocks and statements

    def block(self, block: Block, target: str | None) -> list[ast.stmt]:
        """Statements for `block`; its value is returned (target None: tail position) or assigned."""
        out: list[ast.stmt] = []
        stmts = block.stmts
        for index, let in enumerate(stmts):
            tail = (
                target is None
                and index == len(stmts) - 1
                and isinstance(block.result, Var)
                and block.result.name == let.var.name
            )
            finished = self.statement(let, tail, out)
            if finished:
                return out
        result = self.atom(block.result)
        if target is None:
            out.append(ast.Return(parse_expr(result)))
        elif result != target:
            out.append(_assign(target, result))
        elif not out:
            out.append(ast.Pass())
        return out

    def statement(self, let: Let, tail: bool, out: list) -> bool:
        """Append the statements of `let`; True when control cannot continue past them."""
        self.span = let.span or self.func.span
        note = source_comment(let.span)
        if note is not None and note != self.last_comment:
            out.append(comment(note))
            self.last_comment = note
        value = let.value
        if isinstance(value, If):
            out.append(self._if(value, None if tail else self._target(let)))
            self.last_comment = None
            return tail
        if isinstance(value, Match):
            out.extend(self._match(value, None if tail else self._target(let)))
            self.last_comment = None
            return tail
        if isinstance(value, Fail):
            self.module.uses.add("EvaluationError")
            out.append(ast.Raise(exc=parse_expr(f"EvaluationError({value.message!r})"), cause=None))
            return True
        if isinstance(value, Call) and value.tail and tail and value.func == self.func.name:
            out.extend(self._self_tail_call(value))
            return True
        if isinstance(value, RefSet):
            out.append(
                ast.Assign(targets=[parse_expr(f"{self.atom(value.ref)}.value")], value=self._atom_expr(value.value))
            )
            if tail:
                out.append(ast.Return(ast.Tuple([], ast.Load())))
                return True
            if let.var.name in self.used:
                out.append(_assign(self._target(let), "()"))
            return False
        text = self.expression(value)
        if tail:
            out.append(ast.Return(parse_expr(text)))
            return True
        out.append(_assign(self._target(let), text))
        return False

    def _target(self, let: Let) -> str:
        name = self.locals.get(let.var.name)
        if name is None:
            name = self.locals.bind(let.var.name, let.var.name)
        return name

    def _if(self, value: If, target: str | None) -> ast.If:
        test = parse_expr(self.atom(value.cond))
        outer = self.last_comment  # statements on the If's own line are not annotated again
        then = self.block(value.then, target)
        self.last_comment = outer
        orelse = self.block(value.else_, target)
        return ast.If(test=test, body=then, orelse=orelse)

    def _match(self, value: Match, target: str | None) -> list[ast.stmt]:
        scrutinee = self.atom(value.scrutinee)
        adt = self._adt_of(value)
        arms = []  # (relay constructor name, statements)
        outer = self.last_comment
        for case in value.cases:
            ctor = adt.constructor(case.ctor) if adt is not None else None
            relay_name = ctor.relay_name if ctor is not None else case.ctor
            self.last_comment = outer
            body = self._unpack(scrutinee, case.binders) + self.block(case.body, target)
            arms.append((relay_name, body))
        default = None
        if value.default is not None:
            self.last_comment = outer
            default = self.block(value.default, target)
        if default is None and len(arms) == 1:
            relay_name, body = arms[0]
            return [comment(f"{scrutinee} is always {relay_name}")] + body
        if default is None:
            relay_name, body = arms.pop()
            default = [comment(relay_name, trailing=True)] + body
        node = None
        for relay_name, body in reversed(arms):
            test = parse_expr(f"{scrutinee}.constructor == {relay_name!r}")
            node = ast.If(test=test, body=body, orelse=default if node is None else [node])
        return [node]

    def _adt_of(self, value: Match):
        ty = getattr(value.scrutinee, "type", None)
        name = getattr(ty, "name", None)
        return self.program.find_adt(name) if name else None

    def _unpack(self, scrutinee: str, binders) -> list[ast.stmt]:
        names = [None if b is None else self.locals.bind(b.name, b.name) for b in binders]
        if len(names) >= 2 and all(n is not None for n in names):
            targets = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
            return [ast.Assign(targets=[targets], value=parse_expr(f"{scrutinee}.fields"))]
        return [_assign(n, f"{scrutinee}.fields[{i}]") for i, n in enumerate(names) if n is not None]

    def _self_tail_call(self, call: Call) -> list[ast.stmt]:
        self.loops = True
        pairs = [(p, self.atom(a)) for p, a in zip(self.param_names, call.args)]
        pairs = [(p, a) for p, a in pairs if p != a]
        out: list[ast.stmt] = []
        if len(pairs) == 1:
            out.append(_assign(pairs[0][0], pairs[0][1]))
        elif pairs:
            targets = ast.Tuple([ast.Name(p, ast.Store()) for p, _ in pairs], ast.Store())
            values = parse_expr(_tuple_text([a for _, a in pairs]))
            values.bare = True  # `i, acc = i1, acc1` reads as the simultaneous rebinding it is
            out.append(ast.Assign(targets=[targets], value=values))
        out.append(ast.Continue())
        return out

    # ------------------------------------------------------------ values and atoms

    def expression(self, value) -> str:
        names = self.module.names
        if isinstance(value, AtomValue):
            return self.atom(value.atom)
        if isinstance(value, KernelCall):
            callee = names.lookup(("kernel", value.kernel))
            return f"{callee}({', '.join(self.atom(a) for a in value.args)})"
        if isinstance(value, Call):
            callee = self.name if value.func == self.func.name else names.lookup(("fn", value.func))
            return f"{callee}({', '.join(self.atom(a) for a in value.args)})"
        if isinstance(value, ClosureCall):
            return f"{self.atom(value.closure)}({', '.join(self.atom(a) for a in value.args)})"
        if isinstance(value, MakeClosure):
            target = self.program.function(value.func)
            if not target.env:
                return names.lookup(("fn", value.func))
            factory = names.lookup(("make", value.func))
            return f"{factory}({', '.join(self.atom(a) for a in value.captured)})"
        if isinstance(value, MakeTuple):
            return "()" if not value.fields else _tuple_text([self.atom(a) for a in value.fields])
        if isinstance(value, Proj):
            return f"{self.atom(value.tuple_value)}[{value.index}]"
        if isinstance(value, MakeAdt):
            self.module.uses.add("ADTValue")
            ctor = self.program.adt(value.adt).constructor(value.ctor)
            relay_name = ctor.relay_name if ctor is not None else value.ctor
            if not value.fields:
                return f"ADTValue({relay_name!r})"
            return f"ADTValue({relay_name!r}, {_tuple_text([self.atom(a) for a in value.fields])})"
        if isinstance(value, AdtField):
            return f"{self.atom(value.value)}.fields[{value.index}]"
        if isinstance(value, RefNew):
            self.module.uses.add("RefValue")
            return f"RefValue({self.atom(value.value)})"
        if isinstance(value, RefGet):
            return f"{self.atom(value.ref)}.value"
        raise ill_formed(f"fn @{self.func.name}: {type(value).__name__} is not an LIR value", self.span)

    def atom(self, atom) -> str:
        """An atom's text; literals are numpy scalars (`np.int32(0)`), like every computed 0-d value."""
        if isinstance(atom, Var):
            name = self.locals.get(atom.name)
            if name is None:
                raise ill_formed(f"fn @{self.func.name}: %{atom.name} is not defined", self.span)
            return name
        if isinstance(atom, ConstRef):
            return self.module.names.lookup(("const", atom.name))
        if isinstance(atom, Literal):
            dtype = atom.type.dtype
            return scalar_literal(atom.value, dtype)
        raise ill_formed(f"fn @{self.func.name}: {atom!r} is not an LIR atom", self.span)

    def _atom_expr(self, atom) -> ast.expr:
        return parse_expr(self.atom(atom))


def _kernel_param_names(program) -> dict[str, list[str]]:
    """Parameter names for kernels called from exactly one place: the names of the arguments there
    (`fused_dense_bias_add_relu(x, w1, b1)` reads better than `(p0, p1, p2)`)."""
    from ...lir.walk import iter_lets

    calls: dict[str, list] = {}
    for func in program.functions:
        for let in iter_lets(func.body):
            if isinstance(let.value, KernelCall):
                calls.setdefault(let.value.kernel, []).append(let.value.args)
    chosen = {}
    for kernel in program.kernels:
        sites = calls.get(kernel.name, [])
        if len(sites) != 1:
            continue
        names = []
        for param, arg in zip(kernel.params, sites[0]):
            names.append(arg.name if isinstance(arg, (Var, ConstRef)) else param.name)
        if len(set(names)) == len(names):
            chosen[kernel.name] = names
    return chosen


def _type_text(ty) -> str:
    return readable(type_text(ty))  # ADT names in types are user input


def _used_names(block: Block) -> set[str]:
    """Names of the variables a function body reads (to drop bindings of unused unit values)."""
    used: set[str] = set()
    pending = [block]
    while pending:
        current = pending.pop()
        if isinstance(current.result, Var):
            used.add(current.result.name)
        for let in current.stmts:
            used.update(a.name for a in atoms_of(let.value) if isinstance(a, Var))
            pending.extend(sub_blocks(let.value))
    return used


def _assign(target: str, value: str) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(target, ast.Store())], value=parse_expr(value))


def _function_def(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    from .kernels import _arguments

    return ast.FunctionDef(name=name, args=_arguments(params), body=body, decorator_list=[], returns=None)
