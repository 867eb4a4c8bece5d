"""The Python side of a tir library: checked arguments in (shared Converters), flat tensors across, values out.

Arguments are checked and converted by the shared `Converters` (transpile.backends.signature:
same rules and messages as every backend) before native code runs; tuples are flattened to their tensors, each
passed as a 64-byte aligned DLPack view (copied only when needed). The library's `main` returns
the flattened result tensors, which are regrouped into the result's tuple structure.
"""

from __future__ import annotations

import numpy as np

from ...errors import EvaluationError
from ...lir.types import TensorType
from ...runtime.boundary import aligned
from ..signature import Converters, flat_result_reader, tensor_fast_path, type_from_json

__all__ = ["make_tir_entry"]


def _flattener(ty):
    if isinstance(ty, TensorType):
        return lambda value, out: out.append(value)
    fields = [_flattener(f) for f in ty.fields]

    def flatten(value, out):
        for fn, item in zip(fields, value):
            fn(item, out)

    return flatten


def _passable(array: np.ndarray) -> np.ndarray:
    """An array native code may use: 0-d ones as they are (scalar loads need no alignment),
    others 64-byte aligned and contiguous (copied only when they are not)."""
    if array.ndim == 0:
        return array if array.flags.writeable else array.copy()
    return aligned(array)


def make_tir_entry(function, info: dict):
    """The user-facing callable of the library's `main`."""
    import tvm_ffi

    signature = info["signature"]
    params = [type_from_json(p["type"]) for p in signature["params"]]
    result_type = type_from_json(signature["result"])
    flatteners = [_flattener(t) for t in params]
    read_result = flat_result_reader(result_type)
    from_dlpack = tvm_ffi.from_dlpack

    def call_native(fn, *tensors):
        try:
            return fn(*tensors)
        except Exception as exc:  # errors raised by TIR asserts or the shim
            raise EvaluationError(str(exc).strip() or type(exc).__name__) from None

    def raw(*args):
        flat: list = []
        for flatten, arg in zip(flatteners, args):
            flatten(arg, flat)
        return read_result(call_native(function, *[from_dlpack(_passable(a)) for a in flat]))

    names = ", ".join(f"%{p['name']}" for p in signature["params"])
    what = f"@{signature['relay_entry']}({names})"
    # Recursive programs get a big native stack from the library itself (tir_shim.cc).
    entry = Converters({}, lambda fn, *a: fn(*a)).checked(raw, params, result_type, what)
    if all(isinstance(t, TensorType) for t in params):  # the library's main does not align inputs itself
        entry = tensor_fast_path(function, params, result_type, entry, call_native, aligned_only=True)
    entry.__transpile_signature__ = signature
    return entry
