"""relay-aot's `aot.compile(func, mod, ctx, tgt)`: a Relay function compiled ahead of time into a callable.

relay-aot compiled to C++; here the backend TRANSPILE_TVM_BACKEND names (default interpreter)
builds it. Results look as relay-aot returned them: tensors as NDArray, ADT values as
ConstructorValue (`.constructor`, `.fields`), tuples indexable.
"""

from __future__ import annotations

from ..errors import TranspileError
from ..relay.backend.runner import compile_callable, host_target

__all__ = ["compile"]


def compile(func, mod, ctx=None, tgt=None, name="default", record_time=False):  # noqa: A001 - relay-aot's name
    """A callable running `func` (a closed relay.Function, or a GlobalVar of `mod`) against `mod`."""
    from ..relay.expr import Function, GlobalVar

    if tgt is not None:
        host_target(tgt)
    if not isinstance(func, (Function, GlobalVar)):
        raise TranspileError(f"aot.compile expects a relay.Function or GlobalVar, got {type(func).__name__}")
    if record_time:
        raise TranspileError("aot.compile(record_time=True) is not supported: time the returned callable instead")
    return compile_callable(func, mod, kind="debug")
