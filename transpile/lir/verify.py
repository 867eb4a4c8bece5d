"""The LIR verifier: checks scoping, types, calls, closures, matches and tail flags; reports every problem."""

from __future__ import annotations

import numpy as np

from ..relay.op.registry import OpPattern
from ..relay.ty import AnyDim, TensorType
from .nodes import (
    VALUES,
    Block,
    Call,
    ClosureCall,
    ConstRef,
    Fail,
    FunctionDef,
    If,
    KernelCall,
    Let,
    LIRError,
    Literal,
    MakeAdt,
    MakeClosure,
    Match,
    Program,
    RefSet,
    Var,
)
from ..relay.deep import deep_recursion
from .printer import atom_text, stmt_text
from .typeof import value_type
from .types import AdtT, ClosureT, RefT, TupleT, bool_scalar, fits, type_text
from .walk import atoms_of, sub_blocks

__all__ = ["verify", "problems_of"]


@deep_recursion
def verify(program: Program) -> None:
    """Raise LIRError listing every problem of `program` (with function and statement context)."""
    checker = _Verifier(program)
    checker.run()
    if checker.problems:
        raise LIRError(checker.problems, checker.first_span)


@deep_recursion
def problems_of(program: Program) -> list[str]:
    """The verifier's problems as a list (empty for a well-formed program)."""
    checker = _Verifier(program)
    checker.run()
    return checker.problems


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class _Verifier:
    def __init__(self, program: Program):
        self.program = program
        self.problems: list[str] = []
        self.first_span = None

    def report(self, where: str, message: str, span=None) -> None:
        self.problems.append(f"{where}: {message}")
        if self.first_span is None and span is not None:
            self.first_span = span

    # ------------------------------------------------------------ program level

    def run(self) -> None:
        p = self.program
        self.unique_names()
        for adt in p.adts:
            self.adt(adt)
        for const in p.constants:
            self.constant(const)
        for kernel in p.kernels:
            _KernelChecker(self, kernel).run()
        for func in p.functions:
            _FunctionChecker(self, func).run()
        entry = p.find_function(p.entry)
        if entry is None:
            self.report("program", f"entry @{p.entry} is not a defined function")
        elif entry.env is not None:
            self.report("program", f"entry @{p.entry} is a closure body (it has an env)")

    def unique_names(self) -> None:
        seen_adts: set[str] = set()
        for adt in self.program.adts:
            if adt.name in seen_adts:
                self.report("program", f"ADT {adt.name} is defined more than once")
            seen_adts.add(adt.name)
        # Constants, kernels and functions share one namespace so backends can emit them side by side.
        kinds: dict[str, list[str]] = {}
        for kind, items in (
            ("constant", self.program.constants),
            ("kernel", self.program.kernels),
            ("function", self.program.functions),
        ):
            for item in items:
                kinds.setdefault(item.name, []).append(kind)
        for name, found in kinds.items():
            if len(found) > 1:
                self.report("program", f"{name} is defined {len(found)} times ({', '.join(found)})")

    def check_type(self, ty, where: str, span=None) -> bool:
        """Report types that cannot appear in the LIR (Relay type variables, unknown ADTs...)."""
        problem = self._type_problem(ty)
        if problem:
            self.report(where, problem, span)
            return False
        return True

    def _type_problem(self, ty) -> str | None:
        if isinstance(ty, TensorType):
            if any(not isinstance(d, AnyDim) and d < 0 for d in ty.shape):
                return f"{type_text(ty)} has a negative dimension"
            return None
        if isinstance(ty, TupleT):
            return next((p for p in map(self._type_problem, ty.fields) if p), None)
        if isinstance(ty, AdtT):
            return None if self.program.find_adt(ty.name) else f"unknown ADT {ty.name}"
        if isinstance(ty, ClosureT):
            return next((p for p in map(self._type_problem, (*ty.params, ty.ret)) if p), None)
        if isinstance(ty, RefT):
            return self._type_problem(ty.value)
        return f"{type(ty).__name__} {ty!r} is not an LIR type"

    def adt(self, adt) -> None:
        where = f"adt {adt.name}"
        names: set[str] = set()
        tags: set[int] = set()
        for ctor in adt.constructors:
            if ctor.name in names:
                self.report(where, f"constructor {ctor.name} is defined more than once")
            if ctor.tag in tags:
                self.report(where, f"tag {ctor.tag} of {ctor.name} is used by another constructor")
            if not isinstance(ctor.tag, int) or ctor.tag < 0:
                self.report(where, f"tag of {ctor.name} must be a non-negative int, found {ctor.tag!r}")
            names.add(ctor.name)
            tags.add(ctor.tag)
            for ty in ctor.fields:
                self.check_type(ty, f"{where}, constructor {ctor.name}")

    def constant(self, const) -> None:
        where = f"const {const.name}"
        ty, value = const.type, const.value
        if not isinstance(ty, TensorType) or ty.concrete_shape is None:
            self.report(where, f"type must be a tensor type with a static shape, found {type_text(ty)}")
            return
        if not isinstance(value, np.ndarray):
            self.report(where, f"value must be a numpy array, found {type(value).__name__}")
            return
        if value.flags.writeable:
            self.report(where, "value must be read-only")
        if tuple(value.shape) != ty.shape or value.dtype.name != ty.dtype:
            found = TensorType(value.shape, value.dtype.name)
            self.report(where, f"value is a {type_text(found)}, but the type says {type_text(ty)}")


class _KernelChecker:
    """A kernel's Relay body: a type-checked Function calling registered operators only."""

    def __init__(self, verifier: _Verifier, kernel):
        self.v = verifier
        self.kernel = kernel
        self.where = f"kernel {kernel.name}"

    def report(self, message: str) -> None:
        self.v.report(self.where, message)

    def run(self) -> None:
        from ..relay import expr as rx
        from ..relay.printer import astext_node
        from .types import from_relay_type
        from .walk import kernel_ops

        k = self.kernel
        names = [p.name for p in k.params]
        for p in k.params:
            if not isinstance(p.type, TensorType):
                self.report(f"parameter %{p.name} must be a tensor, found {type_text(p.type)}")
            if names.count(p.name) > 1:
                self.report(f"parameter %{p.name} is defined more than once")
        result_fields = k.result.fields if isinstance(k.result, TupleT) else (k.result,)
        if not all(isinstance(t, TensorType) for t in result_fields):
            self.report(f"result must be a tensor or a tuple of tensors, found {type_text(k.result)}")
        if not isinstance(k.pattern, OpPattern):
            self.report(f"pattern must be an OpPattern, found {k.pattern!r}")
        fn = k.body
        if not isinstance(fn, rx.Function):
            self.report(f"body must be a relay Function, found {type(fn).__name__}")
            return
        if len(fn.params) != len(k.params):
            self.report(f"body has {_count(len(fn.params), 'parameter')}, the kernel {len(k.params)}")
        for param, var in zip(k.params, fn.params):
            var_type = getattr(var, "checked_type_", None) or var.type_annotation
            if var.name_hint != param.name:
                self.report(f"body parameter %{var.name_hint} should be named %{param.name} like the kernel's")
            if var_type != param.type:
                self.report(
                    f"body parameter %{var.name_hint} has type {_relay_type_text(var_type)}, the kernel says {type_text(param.type)}"
                )
        body_type = getattr(fn.body, "checked_type_", None)
        if body_type is None:
            self.report("body is not type-checked (run relay.infer_type_expr on it)")
        else:
            try:
                lir_type = from_relay_type(body_type)
            except ValueError as err:
                self.report(str(err))
            else:
                if lir_type != k.result:
                    self.report(f"body returns {type_text(lir_type)}, but the kernel result is {type_text(k.result)}")
        params = {id(p) for p in fn.params}
        stack, seen = [fn.body], set()
        while stack:
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            if isinstance(e, rx.Var):
                if id(e) not in params:
                    self.report(f"body uses %{e.name_hint}, which is not a kernel parameter")
            elif isinstance(e, rx.Constant):
                if e.data.ndim != 0:
                    self.report(
                        f"body holds a constant of shape {tuple(e.data.shape)}; hoist it into a ConstDef and pass it as an argument"
                    )
            elif isinstance(e, rx.Call):
                if not (isinstance(e.op, rx.Op) and e.op.definition is not None):
                    self.report(f"body calls {astext_node(e.op)}, which is not a registered operator")
                stack.extend(e.args)
            elif isinstance(e, rx.Tuple):
                stack.extend(e.fields)
            elif isinstance(e, rx.TupleGetItem):
                stack.append(e.tuple_value)
            else:
                self.report(
                    f"body contains a {type(e).__name__}; kernels hold only operator calls, tuples and projections"
                )
        ops = kernel_ops(fn)
        if not ops:
            self.report("body calls no operator")
        if tuple(k.ops) != ops:
            self.report(f"ops {list(k.ops)} do not list the body's operators {list(ops)}")


def _relay_type_text(ty) -> str:
    if ty is None:
        return "<none>"
    if isinstance(ty, TensorType):
        return type_text(ty)
    from ..relay.printer import type_to_text

    return type_to_text(ty)


class _FunctionChecker:
    """Scoping and typing of one function body; names are unique across the whole function."""

    def __init__(self, verifier: _Verifier, func: FunctionDef):
        self.v = verifier
        self.program = verifier.program
        self.func = func
        self.defined: set[str] = set()
        self.all_binders = self._binders()

    def _binders(self) -> set[str]:
        """Every name the function binds anywhere, to tell 'used before its definition' from 'not defined'."""
        names = {p.name for p in (*self.func.params, *(self.func.env or ()))}
        pending = [self.func.body]
        while pending:
            block = pending.pop()
            for stmt in block.stmts if isinstance(block, Block) else ():
                if not isinstance(stmt, Let):
                    continue
                names.add(getattr(stmt.var, "name", None))
                if isinstance(stmt.value, Match):
                    names.update(b.name for c in stmt.value.cases for b in c.binders if isinstance(b, Var))
                pending.extend(sub_blocks(stmt.value))
        return names

    def report(self, where: str | None, message: str, span=None) -> None:
        head = f"fn @{self.func.name}"
        self.v.report(f"{head}: `{where}`" if where else head, message, span or self.func.span)

    def define(self, name: str, ty, where: str | None, span=None) -> None:
        if name in self.defined:
            self.report(where, f"%{name} is defined more than once", span)
        self.defined.add(name)
        problem = self.v._type_problem(ty)
        if problem:
            self.report(where, f"%{name}: {problem}", span)

    def run(self) -> None:
        f = self.func
        scope = {}
        for p in (*(f.env or ()), *f.params):
            self.define(p.name, p.type, None)
            scope[p.name] = p.type
        ret_ok = self.v.check_type(f.ret, f"fn @{f.name}", f.span)
        if not isinstance(f.body, Block):
            self.report(None, f"body must be a Block, found {type(f.body).__name__}")
            return
        self.block(f.body, scope, f.ret if ret_ok else None, "the function body", tail=True)

    # ------------------------------------------------------------ blocks, statements, atoms

    def block(self, block: Block, scope: dict, expected, what: str, tail: bool) -> None:
        """Check a block; `tail` says whether it is in tail position (see walk.tail_lets)."""
        if not isinstance(block, Block):
            self.report(None, f"{what} must be a Block, found {type(block).__name__}")
            return
        scope = dict(scope)
        for index, stmt in enumerate(block.stmts):
            if not isinstance(stmt, Let) or not isinstance(stmt.var, Var):
                self.report(None, f"{what} holds {stmt!r}, which is not a Let of a Var")
                continue
            where = stmt_text(stmt)
            result = block.result
            in_tail = (
                tail and index == len(block.stmts) - 1 and isinstance(result, Var) and result.name == stmt.var.name
            )
            if isinstance(stmt.value, (Call, ClosureCall)) and stmt.value.tail and not in_tail:
                self.report(where, "tail call is not in tail position", stmt.span)
            ty = self.value(stmt, scope, where, in_tail)
            self.define(stmt.var.name, stmt.var.type, where, stmt.span)
            if ty is not None and not fits(ty, stmt.var.type):
                self.report(
                    where,
                    f"%{stmt.var.name} has type {type_text(stmt.var.type)}, but the value has type {type_text(ty)}",
                    stmt.span,
                )
            scope[stmt.var.name] = stmt.var.type
        where = f"return {atom_text(block.result)}"
        ty = self.atom(block.result, scope, where)
        if ty is not None and expected is not None and not fits(ty, expected):
            self.report(where, f"{what} returns {type_text(ty)}, but {type_text(expected)} is expected")

    def atom(self, atom, scope: dict, where: str, span=None):
        if isinstance(atom, Var):
            known = scope.get(atom.name)
            if known is None:
                if atom.name in self.defined:
                    self.report(where, f"%{atom.name} is used outside the scope of its definition", span)
                elif atom.name in self.all_binders:
                    self.report(where, f"%{atom.name} is used before its definition", span)
                else:
                    self.report(where, f"%{atom.name} is not defined", span)
                return None
            if known != atom.type:
                self.report(
                    where,
                    f"%{atom.name} is used at type {type_text(atom.type)}, but it is defined with type {type_text(known)}",
                    span,
                )
                return None
            return known
        if isinstance(atom, ConstRef):
            const = self.program.find_constant(atom.name)
            if const is None:
                self.report(where, f"unknown constant {atom.name}", span)
                return None
            if const.type != atom.type:
                self.report(
                    where,
                    f"const {atom.name} is used at type {type_text(atom.type)}, but it is defined with type {type_text(const.type)}",
                    span,
                )
                return None
            return const.type
        if isinstance(atom, Literal):
            problem = _literal_problem(atom)
            if problem:
                self.report(where, problem, span)
                return None
            return atom.type
        self.report(where, f"{type(atom).__name__} is not an atom", span)
        return None

    def args(self, args, expected_types, callee: str, where: str, span, verb="takes", noun="argument", item="argument"):
        if len(args) != len(expected_types):
            self.report(where, f"{callee} {verb} {_count(len(expected_types), noun)}, got {len(args)}", span)
            return
        for i, (arg, ty) in enumerate(zip(args, expected_types)):
            if not fits(arg.type, ty):
                message = f"{item} {i + 1} of {callee} has type {type_text(arg.type)}, but {type_text(ty)} is expected"
                self.report(where, message, span)

    def value(self, stmt: Let, scope: dict, where: str, tail: bool):
        value, span = stmt.value, stmt.span
        if not isinstance(value, VALUES):
            self.report(where, f"{type(value).__name__} is not an LIR value", span)
            return None
        atoms_ok = all([self.atom(a, scope, where, span) is not None for a in atoms_of(value)])
        # The blocks of an If or Match are checked even when its atom is bad, to report their problems too.
        if isinstance(value, If):
            if atoms_ok and value.cond.type != bool_scalar():
                self.report(
                    where, f"if condition has type {type_text(value.cond.type)}, but Tensor[(), bool] is expected", span
                )
            self.block(value.then, scope, stmt.var.type, "the then branch", tail)
            self.block(value.else_, scope, stmt.var.type, "the else branch", tail)
            return stmt.var.type
        if isinstance(value, Match):
            return self.match(value, stmt, scope, where, tail, atoms_ok)
        if not atoms_ok:
            return None
        before = len(self.v.problems)
        p = self.program
        if isinstance(value, KernelCall):
            kernel = p.find_kernel(value.kernel)
            if kernel is not None:
                self.args(value.args, [q.type for q in kernel.params], f"kernel {kernel.name}", where, span)
        elif isinstance(value, (Call, MakeClosure)):
            func = p.find_function(value.func)
            if func is not None:
                self.function_use(value, func, where, span)
        elif isinstance(value, ClosureCall):
            ty = value.closure.type
            if isinstance(ty, ClosureT):
                self.args(value.args, ty.params, f"closure {atom_text(value.closure)}", where, span)
        elif isinstance(value, MakeAdt):
            adt = p.find_adt(value.adt)
            ctor = adt.constructor(value.ctor) if adt is not None else None
            if adt is not None and ctor is None:
                self.report(where, f"ADT {adt.name} has no constructor {value.ctor}", span)
            elif ctor is not None:
                self.args(value.fields, ctor.fields, f"constructor {ctor.name}", where, span)
        elif isinstance(value, RefSet):
            ty = value.ref.type
            if not isinstance(ty, RefT):
                self.report(where, f"ref_set of a value of type {type_text(ty)}, which is not a reference", span)
            elif value.value.type != ty.value:
                self.report(where, f"ref_set stores {type_text(value.value.type)} into {type_text(ty)}", span)
        elif isinstance(value, Fail):
            problem = self.v._type_problem(value.type)
            if problem:
                self.report(where, problem, span)
        if len(self.v.problems) > before:
            return None
        ty = value_type(value, p, lambda message: self.report(where, message, span))
        return ty

    def function_use(self, value, func: FunctionDef, where: str, span) -> None:
        if isinstance(value, Call):
            if func.env is not None and func.name != self.func.name:
                self.report(
                    where, f"@{func.name} is a closure body: build it with make_closure and use call_closure", span
                )
                return
            self.args(value.args, [q.type for q in func.params], f"@{func.name}", where, span)
            return
        if func.env is None:
            self.report(where, f"make_closure of @{func.name}, which is not a closure body (it has no env)", span)
            return
        env_types = [q.type for q in func.env]
        self.args(value.captured, env_types, f"@{func.name}", where, span, "captures", "value", "captured value")

    def match(self, value: Match, stmt: Let, scope: dict, where: str, tail: bool, scrutinee_ok: bool):
        span = stmt.span
        ty = value.scrutinee.type if scrutinee_ok else None
        adt = self.program.find_adt(ty.name) if isinstance(ty, AdtT) else None
        if not scrutinee_ok:
            pass
        elif not isinstance(ty, AdtT):
            self.report(where, f"match on a value of type {type_text(ty)}, which is not an ADT", span)
        elif adt is None:
            self.report(where, f"match on a value of unknown ADT {ty.name}", span)
        seen: set[str] = set()
        for case in value.cases:
            case_scope = dict(scope)
            ctor = adt.constructor(case.ctor) if adt is not None else None
            if adt is not None and ctor is None:
                self.report(where, f"ADT {adt.name} has no constructor {case.ctor}", span)
            if case.ctor in seen:
                self.report(where, f"constructor {case.ctor} has more than one case", span)
            seen.add(case.ctor)
            if ctor is not None and len(case.binders) != len(ctor.fields):
                self.report(
                    where,
                    f"case {case.ctor} binds {_count(len(case.binders), 'variable')}, but {ctor.name} has {_count(len(ctor.fields), 'field')}",
                    span,
                )
            for i, binder in enumerate(case.binders):
                if binder is None:
                    continue
                if not isinstance(binder, Var):
                    self.report(where, f"binder {binder!r} of case {case.ctor} is not a Var or None", span)
                    continue
                self.define(binder.name, binder.type, where, span)
                case_scope[binder.name] = binder.type
                if ctor is not None and i < len(ctor.fields) and binder.type != ctor.fields[i]:
                    self.report(
                        where,
                        f"binder %{binder.name} of case {case.ctor} has type {type_text(binder.type)}, but field {i} of {ctor.name} is {type_text(ctor.fields[i])}",
                        span,
                    )
            self.block(case.body, case_scope, stmt.var.type, f"case {case.ctor}", tail)
        if value.default is not None:
            self.block(value.default, scope, stmt.var.type, "the default case", tail)
        elif adt is not None:
            missing = [c.name for c in adt.constructors if c.name not in seen]
            if missing:
                self.report(where, f"match is not exhaustive: no case for {', '.join(missing)} and no default", span)
        if not value.cases and value.default is None:
            self.report(where, "match has no cases and no default", span)
        return stmt.var.type


def _literal_problem(lit: Literal) -> str | None:
    ty, value = lit.type, lit.value
    if not isinstance(ty, TensorType) or ty.shape != ():
        return f"literal {value!r} must have a 0-d tensor type, found {type_text(ty)}"
    dtype = ty.dtype
    if dtype == "bool":
        ok = isinstance(value, bool)
    elif dtype.startswith(("int", "uint")):
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok:
            info = np.iinfo(dtype)
            if not info.min <= value <= info.max:
                return f"literal {value} is out of range for {dtype}"
    elif dtype.startswith(("float", "bfloat")):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        return f"literal of unsupported dtype {dtype}"
    if not ok:
        return f"literal {value!r} does not fit dtype {dtype}"
    return None
