"""`relay.create_executor`: TVM's executor factory, every kind running on one transpile backend."""

from __future__ import annotations

from ...errors import TranspileError
from .graph_executor import AotExecutor, GraphExecutor
from .interpreter import Interpreter
from .vm import VMExecutor

__all__ = ["create_executor", "EXECUTOR_KINDS"]

EXECUTOR_KINDS = {"debug": Interpreter, "graph": GraphExecutor, "vm": VMExecutor, "aot": AotExecutor}


def create_executor(kind="debug", mod=None, device=None, target="llvm", params=None):
    """An executor of `kind` (debug | graph | vm | aot) for `mod`; `params` are bound into its @main.

    Whatever the kind, programs run on the backend TRANSPILE_TVM_BACKEND names (read now); the kind
    only decides how results look, as TVM's executors showed them.
    """
    from ..bind import bind_params_in_module
    from ..module import IRModule
    from .values import to_runtime

    executor_class = EXECUTOR_KINDS.get(kind)
    if executor_class is None:
        raise TranspileError(f"unknown executor kind {kind!r} (expected one of {', '.join(EXECUTOR_KINDS)})")
    if mod is None:
        mod = IRModule()
    if params:
        if "main" not in mod:
            raise TranspileError("create_executor(params=...) binds parameters of @main, but the module has no @main")
        mod = bind_params_in_module(mod, {name: to_runtime(value) for name, value in params.items()})
    return executor_class(mod, device, target)
