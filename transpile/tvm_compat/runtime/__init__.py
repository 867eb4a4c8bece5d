"""TVM's `tvm.runtime` as Relay code used it: NDArray, devices, containers, the VM, convert."""

from . import container, ndarray, vm
from .container import ADT
from ..device import Device, cpu, cuda, device
from ..nd import NDArray
from ...relay.node import Node as Object

__all__ = [
    "NDArray",
    "ADT",
    "Object",
    "Device",
    "cpu",
    "cuda",
    "device",
    "container",
    "ndarray",
    "vm",
    "module",
    "Module",
    "load_module",
    "convert",
]


def convert(value):
    """TVM's runtime.convert: Python lists and tuples stand for TVM Arrays here (as tuples, recursively)."""
    if isinstance(value, (list, tuple)):
        return tuple(convert(item) for item in value)
    if isinstance(value, dict):
        return {key: convert(item) for key, item in value.items()}
    return value


def __getattr__(name):
    # runtime.module imports apache-tvm: only when asked for.
    if name in ("module", "Module", "load_module"):
        import importlib

        # importlib, not `from . import module`: that asks this __getattr__ for "module" again (endless recursion).
        module = importlib.import_module(f"{__name__}.module")
        return module if name == "module" else getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
