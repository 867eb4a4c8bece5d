"""TVM's `tvm.nd`: `nd.array(x)` makes an NDArray, a numpy array with TVM's .numpy()/.asnumpy()."""

from __future__ import annotations

import numpy as np

from ..errors import TranspileError
from ..relay.backend.values import NDArray
from .device import CPU, Device, cpu, device

__all__ = ["NDArray", "array", "empty", "cpu", "device"]


def _check_host(dev) -> None:
    if dev is not None and isinstance(dev, Device) and dev.device_type != CPU:
        raise TranspileError(
            f"device {dev!r} is not available: transpile's tensors live in host memory (use tvm.cpu())"
        )


def array(arr, device=None, dtype=None) -> NDArray:  # noqa: A002 - TVM's parameter name
    """A copy of `arr` (array, list, number, NDArray) as an NDArray."""
    _check_host(device)
    return np.array(arr, dtype=dtype, copy=True).view(NDArray)


def empty(shape, dtype="float32", device=None) -> NDArray:  # noqa: A002
    """An uninitialised NDArray of `shape` and `dtype`."""
    _check_host(device)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return np.empty(shape, dtype=dtype).view(NDArray)
