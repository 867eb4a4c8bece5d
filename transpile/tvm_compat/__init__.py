"""A drop-in `tvm` for code written against TVM <= 0.19's Relay: change only the import lines.

    import transpile.tvm_compat as tvm
    from transpile.tvm_compat import relay, te

`relay` here IS `transpile.relay` (also as `transpile.tvm_compat.relay.X` submodules, through the
alias finder); the rest is the part of TVM that Relay code touches: IRModule, nd, runtime,
devices, ir, transform, target, testing, te/tir/topi (apache-tvm's), error, contrib. Executors
run on the transpile backend named by TRANSPILE_TVM_BACKEND (default interpreter).
"""

from __future__ import annotations

import importlib

from . import alias as _alias

_alias.install()

from . import _ffi, contrib, error, ir, nd, runtime, target, transform  # noqa: E402
from .device import Device, context, cpu, cuda, device, ext_dev, gpu, metal, opencl, rocm, vulkan  # noqa: E402
from .error import TVMError  # noqa: E402
from ..relay.module import IRModule  # noqa: E402
from . import relay  # noqa: E402  (through the alias finder: transpile.relay itself)

__all__ = [
    "relay",
    "IRModule",
    "nd",
    "runtime",
    "ir",
    "transform",
    "target",
    "error",
    "contrib",
    "testing",
    "te",
    "tir",
    "topi",
    "TVMError",
    "Device",
    "cpu",
    "cuda",
    "gpu",
    "device",
    "context",
    "opencl",
    "metal",
    "vulkan",
    "rocm",
    "ext_dev",
    "rpc",
    "aot",
    "autotvm",
    "script",
    "register_func",
    "get_global_func",
]


def register_func(func_name, f=None, override=False):
    """Registers a global PackedFunc in apache-tvm's registry (TVM's tvm.register_func)."""
    import tvm

    return tvm.register_global_func(func_name, f, override)


def get_global_func(name, allow_missing=False):
    """A global PackedFunc of apache-tvm's registry (None when missing and allow_missing)."""
    import tvm

    return tvm.get_global_func(name, allow_missing)


# Loaded on first use: they import pytest or apache-tvm.
_LAZY = {"testing": ".testing", "te": ".te", "tir": ".tir", "topi": ".topi", "aot": ".aot", "rpc": ".rpc"}
_LAZY.update(autotvm=".autotvm", script=".script")


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(module, __name__)
    globals()[name] = value
    return value
