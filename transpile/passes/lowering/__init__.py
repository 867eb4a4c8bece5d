"""Lowering normalized Relay (monomorphic, ANF, one-level matches, fused kernels) to an LIR Program.

Modules: `program` (shared names, types and ADT instances, constants, functions), `kernels`
(primitive functions → deduplicated kernels), `function` (bodies → blocks), `names` (sanitizing,
ADT-instance names); closure conversion lives in `transpile.passes.closure`.
"""

from __future__ import annotations

from ...lir import FunctionDef, Program
from ...relay import expr as rx
from ...relay.analysis import called_globals
from ...relay.deep import deep_recursion
from .function import FunctionLowerer
from .program import LoweringError, ProgramBuilder, is_primitive

__all__ = ["lower_module", "LoweringError"]


def _reachable(mod, entry: str) -> list:
    """Globals reachable from `entry` (called or used as values), in module order."""
    by_name = {gv.name_hint: (gv, fn) for gv, fn in mod.functions.items()}
    seen, pending = {entry}, [entry]
    while pending:
        _, fn = by_name[pending.pop()]
        for gv in called_globals(fn):
            if gv.name_hint not in seen and gv.name_hint in by_name:
                seen.add(gv.name_hint)
                pending.append(gv.name_hint)
    return [(gv, fn) for gv, fn in mod.functions.items() if gv.name_hint in seen]


@deep_recursion
def lower_module(mod, entry: str = "main") -> Program:
    """The LIR program of `entry` and everything it reaches; see transpile.passes.lower."""
    if entry not in mod:
        raise LoweringError(f"the module has no function @{entry}")
    builder = ProgramBuilder(mod)
    functions = _reachable(mod, entry)
    for gv, fn in functions:
        if is_primitive(fn) and gv.name_hint != entry:
            builder.kernel_globals[gv.name_hint] = fn
        else:
            if fn.type_params:
                raise LoweringError(f"@{gv.name_hint} is polymorphic (run monomorphization first)", fn.span)
            builder.reserve_global(gv.name_hint)
    lowerers = []
    for gv, fn in functions:
        name = builder.global_names.get(gv.name_hint)
        if name is None:
            continue
        lowerer = FunctionLowerer(builder, name, gv.name_hint)
        params = tuple(lowerer.bind_param(p) for p in fn.params)
        fn_type = getattr(fn, "checked_type_", None)
        ret = builder.lir_type(fn_type.ret_type) if fn_type is not None else builder.type_of(fn.body)
        builder.signatures[name] = (tuple(p.type for p in params), ret)
        lowerers.append((lowerer, fn, params, ret))
    for lowerer, fn, params, ret in lowerers:
        if is_primitive(fn):  # a primitive entry: one kernel call
            body = lowerer.block(rx.Call(fn, fn.params), ret)
        else:
            body = lowerer.block(fn.body, ret)
        builder.add_function(FunctionDef(lowerer.name, params, ret, body, None, lowerer.relay_name, fn.span))
    return builder.program(builder.global_names[entry])
