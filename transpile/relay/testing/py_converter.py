"""TVM's `relay.testing.py_converter`: an expression as a Python program (to_python), and its value.

TVM's converter turned Relay into a Python AST; transpile's python backend does the same, so
`to_python` parses the source it emits and `run_as_python` runs the compiled program. The
backend is python unless TRANSPILE_TVM_BACKEND names another one (then that one runs it, so the
same tests exercise every backend).
"""

from __future__ import annotations

import ast
import os

from ...errors import TranspileError

__all__ = ["to_python", "run_as_python"]


def _entry_module(expr, mod):
    """(a copy of `mod` with a fresh parameterless entry returning `expr`, that entry's name)."""
    from ..analysis import free_vars
    from ..backend.runner import _fresh_entry
    from ..expr import Function, to_expr
    from ..module import IRModule

    expr = to_expr(expr)  # a TupleWrapper (relay.split's result) stands for its tuple, as in tvm
    unbound = free_vars(expr)
    if unbound:
        names = ", ".join(f"%{v.name_hint}" for v in unbound)
        raise TranspileError(f"cannot run an expression with free variables ({names}) as Python")
    module = mod.copy() if mod is not None else IRModule()
    entry = _fresh_entry(module)
    module[entry] = Function([], expr)
    return module, entry


def _backend() -> str:
    from ..backend.runner import BACKEND_ENV, selected_backend

    return selected_backend() if os.environ.get(BACKEND_ENV, "").strip() else "python"


def to_python(expr, mod=None, target=None) -> ast.Module:
    """The Python program (an ast.Module) the python backend makes of `expr` evaluated against `mod`."""
    import transpile

    module, entry = _entry_module(expr, mod)
    return ast.parse(transpile.emit(module, backend="python", entry=entry))


def run_as_python(expr, mod=None, target=None):
    """The value of `expr` (evaluated against `mod`), as TVM's executors return values."""
    import transpile

    from ..backend.values import ResultStyle

    module, entry = _entry_module(expr, mod)
    function = transpile.compile(module, backend=_backend(), entry=entry)
    return ResultStyle(module, "debug").convert(function())
