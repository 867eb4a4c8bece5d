"""TVM's `relay.backend`: the executors (interpreter, VM, graph) as adapters over transpile's backends.

The backend that runs every executor is chosen by the environment variable TRANSPILE_TVM_BACKEND
(interpreter | python | cpp | tir; default interpreter), read when an executor is created.
"""

from . import executor, graph_executor, interpreter, runner, te_compiler, values, vm
from .executor import create_executor
from .graph_executor import build
from .runner import BACKEND_ENV, selected_backend

__all__ = [
    "create_executor",
    "build",
    "interpreter",
    "vm",
    "graph_executor",
    "values",
    "runner",
    "te_compiler",
    "executor",
    "BACKEND_ENV",
    "selected_backend",
]
