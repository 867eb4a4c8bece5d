"""A direct evaluator of LIR programs: tail calls trampolined, kernels run through the numpy registry."""

from __future__ import annotations

import numpy as np

from transpile import lir
from transpile.errors import EvaluationError
from transpile.relay import expr as rx
from transpile.relay.deep import run_deep
from transpile.runtime import ADTValue, RefValue
from transpile.runtime.boundary import Mismatch, intake_tensor, shape_fits

__all__ = ["ProgramEvaluator"]


class _TailCall:
    """Returned instead of a value by a call in tail position; the caller's loop runs it."""

    __slots__ = ("function", "args", "env")

    def __init__(self, function, args, env):
        self.function, self.args, self.env = function, args, env


class Closure:
    """A closure value; callable from Python with Python values."""

    def __init__(self, evaluator: "ProgramEvaluator", function: lir.FunctionDef, env: tuple):
        self._evaluator, self.function, self.env = evaluator, function, env

    def __call__(self, *args):
        checked = self._evaluator.convert_args(self.function, args)
        return run_deep(self._evaluator.run, self.function, checked, self.env)

    def __repr__(self):
        return f"<closure {self.function.name}>"


class ProgramEvaluator:
    def __init__(self, program: lir.Program):
        self.program = program
        self.constants = {c.name: np.asarray(c.value) for c in program.constants}
        self.kernels = {k.name: KernelRunner(k) for k in program.kernels}
        self.adts = {a.name: a for a in program.adts}

    def entry_callable(self):
        entry = self.program.entry_function

        def call_entry(*args):
            checked = self.convert_args(entry, args)
            return run_deep(self.run, entry, checked, None)

        call_entry.__name__ = entry.name
        return call_entry

    # ----- functions and blocks ------------------------------------------------------------
    def run(self, function: lir.FunctionDef, args: list, env):
        result = self.invoke(function, args, env)
        while isinstance(result, _TailCall):
            result = self.invoke(result.function, result.args, result.env)
        return result

    def invoke(self, function: lir.FunctionDef, args: list, env):
        frame = {p.name: a for p, a in zip(function.params, args)}
        if function.env is not None:
            frame.update({p.name: v for p, v in zip(function.env, env)})
        frame["__env__"] = env
        return self.block(function.body, frame, function)

    def block(self, block: lir.Block, frame: dict, function):
        for stmt in block.stmts:
            value = self.value(stmt.value, frame, function)
            if isinstance(value, _TailCall):
                return value
            frame[stmt.var.name] = value
        return self.atom(block.result, frame)

    def atom(self, atom, frame):
        if isinstance(atom, lir.Var):
            return frame[atom.name]
        if isinstance(atom, lir.ConstRef):
            return self.constants[atom.name]
        return atom.numpy()

    def value(self, v, frame, function):
        atom = self.atom
        if isinstance(v, lir.AtomValue):
            return atom(v.atom, frame)
        if isinstance(v, lir.KernelCall):
            return self.kernels[v.kernel]([atom(a, frame) for a in v.args])
        if isinstance(v, lir.Call):
            target = self.program.function(v.func)
            env = frame["__env__"] if target.env is not None else None
            args = [atom(a, frame) for a in v.args]
            return _TailCall(target, args, env) if v.tail else self.run(target, args, env)
        if isinstance(v, lir.ClosureCall):
            closure = atom(v.closure, frame)
            args = [atom(a, frame) for a in v.args]
            if not isinstance(closure, Closure):  # a Python callable passed in: check what it returns
                return self.convert(closure(*args), v.closure.type.ret, f"the result of {closure!r}")
            if v.tail:
                return _TailCall(closure.function, args, closure.env)
            return self.run(closure.function, args, closure.env)
        if isinstance(v, lir.MakeClosure):
            target = self.program.function(v.func)
            return Closure(self, target, tuple(atom(a, frame) for a in v.captured))
        if isinstance(v, lir.MakeTuple):
            return tuple(atom(a, frame) for a in v.fields)
        if isinstance(v, lir.Proj):
            return atom(v.tuple_value, frame)[v.index]
        if isinstance(v, lir.MakeAdt):
            ctor = self.adts[v.adt].constructor(v.ctor)
            return ADTValue(ctor.relay_name or ctor.name, tuple(atom(a, frame) for a in v.fields))
        if isinstance(v, lir.AdtField):
            return atom(v.value, frame).fields[v.index]
        if isinstance(v, lir.RefNew):
            return RefValue(atom(v.value, frame))
        if isinstance(v, lir.RefGet):
            return atom(v.ref, frame).value
        if isinstance(v, lir.RefSet):
            atom(v.ref, frame).value = atom(v.value, frame)
            return ()
        if isinstance(v, lir.If):
            branch = v.then if bool(atom(v.cond, frame)) else v.else_
            return self.block(branch, frame, function)
        if isinstance(v, lir.Match):
            return self.match(v, frame, function)
        if isinstance(v, lir.Fail):
            raise EvaluationError(v.message)
        raise TypeError(f"unknown LIR value {type(v).__name__}")

    def match(self, m: lir.Match, frame, function):
        scrutinee = self.atom(m.scrutinee, frame)
        adt = self.adts[m.scrutinee.type.name]
        for case in m.cases:
            ctor = adt.constructor(case.ctor)
            if scrutinee.constructor == (ctor.relay_name or ctor.name):
                for binder, field in zip(case.binders, scrutinee.fields):
                    if binder is not None:
                        frame[binder.name] = field
                return self.block(case.body, frame, function)
        if m.default is None:
            raise EvaluationError(f"no case of match covers {scrutinee.constructor}")
        return self.block(m.default, frame, function)

    # ----- the Python boundary -------------------------------------------------------------
    def convert_args(self, function: lir.FunctionDef, args) -> list:
        if len(args) != len(function.params):
            raise EvaluationError(
                f"@{function.relay_name or function.name} takes {len(function.params)} argument(s), got {len(args)}"
            )
        return [self.convert(a, p.type, f"argument {i + 1} ({p.name})") for i, (a, p) in enumerate(zip(args, function.params))]

    def convert(self, value, ty, where: str):
        if isinstance(ty, lir.TensorType):
            return _tensor(value, ty, where)
        if isinstance(ty, lir.TupleT):
            if not isinstance(value, tuple) or len(value) != len(ty.fields):
                raise EvaluationError(f"{where}: expected a tuple of {len(ty.fields)} values, got {type(value).__name__}")
            return tuple(self.convert(v, t, f"{where}[{i}]") for i, (v, t) in enumerate(zip(value, ty.fields)))
        if isinstance(ty, lir.AdtT):
            return self._adt(value, self.adts[ty.name], where)
        if isinstance(ty, lir.RefT):
            if not isinstance(value, RefValue):
                raise EvaluationError(f"{where}: expected a RefValue, got {type(value).__name__}")
            # The cell is shared with the caller: its contents are converted in place.
            value.value = self.convert(value.value, ty.value, f"{where} contents")
            return value
        if isinstance(ty, lir.ClosureT):
            if not callable(value):
                raise EvaluationError(f"{where}: expected a function, got {type(value).__name__}")
            return value
        raise EvaluationError(f"{where}: unsupported parameter type {lir.type_text(ty)}")

    def _adt(self, value, adt: lir.AdtDef, where: str):
        if not isinstance(value, ADTValue):
            raise EvaluationError(f"{where}: expected an ADTValue of {adt.name}, got {type(value).__name__}")
        # Iterative over the spine so long lists do not recurse once per element.
        pending = [(value, adt, where)]
        while pending:
            current, current_adt, path = pending.pop()
            ctor = next((c for c in current_adt.constructors if (c.relay_name or c.name) == current.constructor), None)
            if ctor is None or len(ctor.fields) != len(current.fields):
                names = ", ".join(c.relay_name or c.name for c in current_adt.constructors)
                raise EvaluationError(f"{path}: {current.constructor} is not a constructor of {current_adt.name} ({names})")
            for i, (field, field_type) in enumerate(zip(current.fields, ctor.fields)):
                if isinstance(field_type, lir.AdtT):
                    if not isinstance(field, ADTValue):
                        raise EvaluationError(f"{path}.{i}: expected an ADTValue, got {type(field).__name__}")
                    pending.append((field, self.adts[field_type.name], f"{path}.{i}"))
                else:
                    self.convert(field, field_type, f"{path}.{i}")
        return value


def _tensor(value, ty, where: str) -> np.ndarray:
    try:
        array = intake_tensor(value, ty.dtype, ty.shape)
    except Mismatch as mismatch:
        raise EvaluationError(f"{where}: {mismatch.detail}") from None
    if array is None:
        raise EvaluationError(f"{where}: expected a tensor of {ty.dtype}, got {type(value).__name__}")
    if array.dtype.name != ty.dtype:
        raise EvaluationError(f"{where}: expected dtype {ty.dtype}, got {array.dtype.name}")
    if not shape_fits(array.shape, ty.shape):
        raise EvaluationError(f"{where}: expected shape {tuple(ty.shape)}, got {array.shape}")
    return array


class KernelRunner:
    """Runs one kernel's Relay body with the registry's numpy implementations."""

    def __init__(self, kernel: lir.Kernel):
        self.kernel = kernel
        self.param_names = [p.name_hint for p in kernel.body.params]

    def __call__(self, args):
        env = dict(zip(self.kernel.body.params, args))
        return self._eval(self.kernel.body.body, env)

    def _eval(self, e, env):
        if isinstance(e, rx.Var):
            return env[e]
        if isinstance(e, rx.Constant):
            return np.asarray(e.data)
        if isinstance(e, rx.Tuple):
            return tuple(self._eval(f, env) for f in e.fields)
        if isinstance(e, rx.TupleGetItem):
            return self._eval(e.tuple_value, env)[e.index]
        if isinstance(e, rx.Let):
            env[e.var] = self._eval(e.value, env)
            return self._eval(e.body, env)
        if isinstance(e, rx.Call) and isinstance(e.op, rx.Op):
            if e in env:  # a shared sub-expression already computed
                return env[e]
            args = [self._eval(a, env) for a in e.args]
            out_type = e.checked_type
            result = e.op.definition.numpy_impl(args, e.attrs, out_type)
            if not isinstance(result, tuple):
                result = np.asarray(result, dtype=out_type.dtype)
            env[e] = result
            return result
        raise TypeError(f"unexpected node {type(e).__name__} in kernel {self.kernel.name}")
