"""The reference interpreter's entry point: type-check, compile to Python closures, convert arguments, run."""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ...errors import EvaluationError
from ..deep import run_deep
from ..expr import Expr, Function, Op
from ..module import IRModule
from ..visitor import ExprVisitor
from . import compiler as _compiler
from .compiler import Compiler
from .convert import Converter, convert_arguments, convert_result
from .values import Closure, ConstructorFunction, FunctionCode, OpFunction, short_value

__all__ = ["evaluate", "Interpreter"]


class _State:
    """Mutable per-interpreter run state: the current Relay call depth, and whether a run is active."""

    __slots__ = ("depth", "active")

    def __init__(self):
        self.depth = 0
        self.active = 0


class Interpreter:
    """All functions of one type-checked module, compiled; reusable across evaluations."""

    def __init__(self, typed_mod: IRModule):
        self.mod = typed_mod
        self.state = _State()
        # Runs of one interpreter share their depth bookkeeping: serialize them (re-entrant, so a
        # closure called back from a Python function during a run proceeds).
        self._lock = threading.RLock()
        self.converter = Converter(typed_mod)
        self.codes: dict = {}
        self.global_closures: dict = {}
        for gv, func in typed_mod.functions.items():
            code = FunctionCode(f"@{gv.name_hint}", func, self)
            self.codes[gv] = code
            self.global_closures[gv] = Closure(code, None)
        compiler = Compiler(self)
        for code in self.codes.values():
            compiler.compile_body(code, None)

    # ----- running -----------------------------------------------------------------------------
    def run(self, entry: str, args) -> object:
        gv = next((g for g in self.codes if g.name_hint == entry), None)
        if gv is None:
            raise EvaluationError(f"the module has no function @{entry} to evaluate")
        return self._run_python_call(self.global_closures[gv], args)

    def call_from_python(self, closure: Closure, args) -> object:
        return run_deep(self._run_python_call, closure, args)

    def _run_python_call(self, closure: Closure, args):
        with self._lock:
            return self._run_locked(closure, args)

    def _run_locked(self, closure: Closure, args):
        state = self.state
        outermost = state.active == 0
        if outermost:
            state.depth = 0
        state.active += 1
        saved_depth = state.depth
        try:
            code = closure.code
            values = convert_arguments(self.converter, code, list(args), code.name)
            frame = code.template.copy()
            frame[0] = closure.env
            frame[1 : code.arity + 1] = values
            return code.body(frame)
        except RecursionError:
            raise EvaluationError(
                f"recursion too deep: the Python interpreter ran out of frames after {state.depth} nested Relay calls"
                f" (the limit is {_compiler.MAX_CALL_DEPTH})"
            ) from None
        finally:
            state.depth = saved_depth
            state.active -= 1

    def apply_value(self, f, args, ret_type, span):
        """Calls a function value that is not a Relay closure: a constructor, an operator, a Python callable."""
        if type(f) is ConstructorFunction:
            if len(args) != f.arity:
                raise EvaluationError(f"constructor {f.name} takes {f.arity} argument(s), got {len(args)}", span)
            from ...runtime import ADTValue

            return ADTValue(f.name, args)
        if type(f) is OpFunction:
            result = f.opdef.numpy_impl(list(args), f.attrs, ret_type if ret_type is not None else f.out_type)
            return np.asarray(result) if isinstance(result, np.generic) else result
        if not callable(f):
            raise EvaluationError(f"cannot call {short_value(f)}: it is not a function", span)
        # A Python function passed in as an argument: its result is checked like an argument.
        result = f(*args)
        return convert_result(self.converter, result, ret_type, f"the Python function {getattr(f, '__name__', f)!r}")


# Compiled interpreters per module, reused while the module's definitions are unchanged.
_cache: "weakref.WeakKeyDictionary[IRModule, tuple]" = weakref.WeakKeyDictionary()


def _fingerprint(mod: IRModule) -> tuple:
    return tuple(mod.functions.items()), tuple(mod.type_definitions.items())


def _same(a: tuple, b: tuple) -> bool:
    return all(
        len(x) == len(y) and all(k1 == k2 and v1 is v2 for (k1, v1), (k2, v2) in zip(x, y)) for x, y in zip(a, b)
    )


class _UnknownOpFinder(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.unknown = None  # (operator, span of its use)

    def visit_call(self, call):
        if self.unknown is None and isinstance(call.op, Op) and call.op.definition is None:
            self.unknown = (call.op, call.span)
        super().visit_call(call)

    def visit_op(self, op):
        if self.unknown is None and op.definition is None:
            self.unknown = (op, op.span)


def _reject_unknown_ops(mod: IRModule) -> None:
    """Operators without a numpy implementation cannot run: say so before type checking does."""
    finder = _UnknownOpFinder()
    for func in mod.functions.values():
        finder.visit(func)
        if finder.unknown is not None:
            op, span = finder.unknown
            raise EvaluationError(
                f"operator {op.name} is not in the operator registry: the interpreter cannot run it", span
            )


def _interpreter_for(mod: IRModule) -> Interpreter:
    fingerprint = _fingerprint(mod)
    cached = _cache.get(mod)
    if cached is not None and _same(cached[0], fingerprint):
        return cached[1]
    from ..typing import infer_type

    _reject_unknown_ops(mod)

    interp = Interpreter(infer_type(mod))
    _cache[mod] = (fingerprint, interp)
    return interp


def _as_module(target, mod):
    if isinstance(target, IRModule):
        return target
    if isinstance(target, Expr):
        if mod is None:
            return IRModule.from_expr(target)
        module = mod.copy()
        if not isinstance(target, Function):
            from ..analysis import free_vars

            target = Function(free_vars(target), target)
        module["main"] = target
        return module
    raise TypeError(f"evaluate expects an IRModule or a Relay expression, got {type(target).__name__}")


def _evaluate(target, args, entry, mod):
    module = _as_module(target, mod)
    if isinstance(target, Expr):
        entry = "main"
    if entry not in module:
        raise EvaluationError(f"the module has no function @{entry} to evaluate")
    return _interpreter_for(module).run(entry, args)


def evaluate(target, *args, entry: str = "main", mod: IRModule | None = None):
    """Runs `entry` of a module (or a Relay function/expression) on Python arguments with numpy.

    `target` is an IRModule, or a Function/expression (wrapped as @main, in a copy of `mod` when
    given so it can use that module's functions and types). The module is type-checked first;
    arguments are checked and converted by the parameter types. Returns the Relay value: numpy
    arrays, tuples, transpile.runtime.ADTValue / RefValue, or a callable for a closure.
    """
    return run_deep(_evaluate, target, args, entry, mod)
