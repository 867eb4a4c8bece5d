"""TVM's `runtime.ndarray` (the same module as `tvm.nd`)."""

from ..nd import NDArray, array, cpu, device, empty

__all__ = ["NDArray", "array", "empty", "cpu", "device"]
