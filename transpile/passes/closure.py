"""Closure conversion and lambda lifting, done while lowering to LIR (no intermediate Relay form).

Every non-primitive local `Function` becomes a lifted LIR `FunctionDef` whose `env` holds its free
variables (typed, in order of first use); the place it occurred becomes `MakeClosure(lifted,
captured atoms)`. Closures escaping their scope need nothing special: the env is captured by value.

Let-bound recursive closures (`let %f = fn (...) { ... %f(...) ... }`): `%f` is not captured; in the
lifted body it is the closure itself. A direct call `%f(args)` becomes `Call(lifted, args)` (a
closure body calling itself reuses its env: the shape backends turn into loops); `%f` used as a
value (passed on, returned, captured by an inner closure) is rebuilt there as
`MakeClosure(lifted, env params)`.

A global function used as a value becomes `MakeClosure` of a wrapper `FunctionDef` with `env=()`
that tail-calls the global; an unapplied constructor likewise becomes a closure of a wrapper that
builds the ADT value (a nullary constructor used as a value is just the value). Wrappers and lifted
functions are memoized: one per global, constructor instance, or Relay function node.
"""

from __future__ import annotations

import re

from ..lir import AdtT, Block, Call, ClosureT, FunctionDef, Let, MakeAdt, MakeClosure, Param, Var
from ..relay import expr as rx
from ..relay.analysis import free_vars

__all__ = ["captured_vars", "make_closure", "self_closure", "global_closure", "constructor_value"]


def captured_vars(fn: rx.Function, self_var: rx.Var | None = None) -> list[rx.Var]:
    """The free variables of a local function that its closure must capture (not itself)."""
    return [v for v in free_vars(fn) if v is not self_var]


_TEMPORARY = re.compile(r"^(t?\d+|_)$")  # ANF temporaries (t0, t1...), graph bindings, `_`


def _base_name(hint: str | None, enclosing: str) -> str:
    """A lifted closure is named after its let var (`loop`), or `<global>_lambda` when anonymous."""
    if hint and not _TEMPORARY.match(hint):
        return hint
    return f"{enclosing}_lambda"


def make_closure(lowerer, fn: rx.Function, span=None, self_var: rx.Var | None = None) -> MakeClosure:
    """Lift `fn` (once) and return the MakeClosure that captures its free variables where it occurs.

    `self_var` is the let var `fn` is bound to: when the body mentions it, `fn` is a recursive closure.
    """
    builder = lowerer.b
    free = free_vars(fn)
    recursive = self_var is not None and self_var in free
    captured = [v for v in free if v is not self_var]
    key = (id(fn), recursive)
    lifted = builder.lifted.get(key)
    if lifted is None:
        hint = self_var.name_hint if self_var is not None else None
        name = _lift(lowerer, fn, captured, self_var if recursive else None, _base_name(hint, lowerer.relay_name))
        builder.lifted[key] = lifted = (fn, name)  # the node is kept so its id stays unique
    return MakeClosure(lifted[1], tuple(lowerer.atom(v) for v in captured))


def _lift(lowerer, fn: rx.Function, captured, self_var, base: str) -> str:
    from .lowering.function import SELF, FunctionLowerer

    builder = lowerer.b
    name = builder.fresh(base)
    sub = FunctionLowerer(builder, name, lowerer.relay_name)
    env = tuple(sub.bind_param(v) for v in captured)
    sub.env = tuple(p.var() for p in env)
    if self_var is not None:
        sub.scope[self_var] = SELF
    params = tuple(sub.bind_param(p) for p in fn.params)
    fn_type = getattr(fn, "checked_type_", None)
    ret = builder.lir_type(fn_type.ret_type) if fn_type is not None else builder.type_of(fn.body)
    builder.signatures[name] = (tuple(p.type for p in params), ret)  # before the body: it may call itself
    body = sub.block(fn.body, ret)
    builder.add_function(FunctionDef(name, params, ret, body, env, lowerer.relay_name, fn.span))
    return name


def self_closure(lowerer) -> MakeClosure:
    """Inside a recursive closure's body: the closure itself, rebuilt from the body's own env."""
    return MakeClosure(lowerer.name, lowerer.env)


def global_closure(lowerer, gv: rx.GlobalVar) -> MakeClosure:
    """A global function as a first-class value: a closure of a wrapper with an empty env."""
    from ..errors import UnsupportedFeatureError
    from .lowering.program import LoweringError

    builder = lowerer.b
    if gv.name_hint in builder.kernel_globals:
        raise UnsupportedFeatureError(f"primitive function @{gv.name_hint} used as a value", gv.span)
    target = builder.global_names.get(gv.name_hint)
    if target is None:
        raise LoweringError(f"unknown global @{gv.name_hint}", gv.span)

    def build() -> str:
        params, ret = builder.signatures[target]
        return _wrapper(builder, f"{target}_closure", params, ret, lambda args: Call(target, args), gv.name_hint)

    return MakeClosure(builder.wrapper(("global", target), build), ())


def constructor_value(lowerer, ctor: rx.Constructor, expected):
    """An unapplied constructor as a value: (LIR value, its type).

    Its instance type comes from the context (`expected`), since a Constructor node carries the
    generic type; a nullary constructor is the ADT value itself.
    """
    from .lowering.names import sanitize
    from .lowering.program import LoweringError

    builder = lowerer.b
    ty = expected
    if ty is None:
        try:
            ty = builder.type_of(ctor)
        except LoweringError:
            ty = None
    ctor_name = sanitize(ctor.name_hint, "Ctor")
    if isinstance(ty, AdtT):
        return MakeAdt(ty.name, ctor_name, ()), ty
    if not (isinstance(ty, ClosureT) and isinstance(ty.ret, AdtT)):
        raise LoweringError(
            f"constructor {ctor.name_hint} is used as a value where its instance type is unknown", ctor.span
        )
    adt = ty.ret.name

    def build() -> str:
        return _wrapper(
            builder, f"{adt}_{ctor_name}", ty.params, ty.ret, lambda args: MakeAdt(adt, ctor_name, args), ctor.name_hint
        )

    return MakeClosure(builder.wrapper(("ctor", adt, ctor_name), build), ()), ty


def _wrapper(builder, base: str, param_types, ret, make_value, relay_name: str) -> str:
    name = builder.fresh(base)
    params = tuple(Param(f"a{i}", t) for i, t in enumerate(param_types))
    result = Var("r", ret)
    body = Block((Let(result, make_value(tuple(p.var() for p in params))),), result)
    builder.add_function(FunctionDef(name, params, ret, body, env=(), relay_name=relay_name))
    return name
