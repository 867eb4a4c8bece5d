"""TVM's Device (`tvm.cpu(0)`, `tvm.device("llvm", 0)`): where a tensor lives; transpile has the host CPU only."""

from __future__ import annotations

from ..errors import TranspileError

__all__ = ["Device", "device", "cpu", "cuda", "gpu", "rocm", "opencl", "metal", "vulkan", "ext_dev", "context"]

# DLPack device type codes, as TVM numbered them.
DEVICE_TYPES = {
    "cpu": 1,
    "llvm": 1,
    "c": 1,
    "stackvm": 1,
    "cuda": 2,
    "gpu": 2,
    "nvptx": 2,
    "cl": 4,
    "opencl": 4,
    "vulkan": 7,
    "metal": 8,
    "vpi": 9,
    "rocm": 10,
    "ext_dev": 12,
    "hexagon": 14,
    "webgpu": 15,
}
DEVICE_NAMES = {
    1: "cpu",
    2: "cuda",
    4: "opencl",
    7: "vulkan",
    8: "metal",
    9: "vpi",
    10: "rocm",
    12: "ext_dev",
    14: "hexagon",
    15: "webgpu",
}
CPU = 1


class Device:
    """A (device type, id) pair; only the CPU exists here (`exist` is False for every other type)."""

    __slots__ = ("device_type", "device_id")

    kDLCPU = 1
    kDLCUDA = 2

    def __init__(self, device_type: int, device_id: int = 0):
        self.device_type = int(device_type)
        self.device_id = int(device_id)

    @property
    def exist(self) -> bool:
        return self.device_type == CPU

    def sync(self) -> None:
        """Host computation is synchronous: nothing to wait for."""

    def __eq__(self, other):
        return isinstance(other, Device) and (self.device_type, self.device_id) == (other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{DEVICE_NAMES.get(self.device_type, self.device_type)}({self.device_id})"


def device(dev_type, dev_id: int = 0) -> Device:
    """The device for a type code, a name ("cpu", "cuda"…) or a target ("llvm -mcpu=…", a Target)."""
    if isinstance(dev_type, Device):
        return dev_type
    if isinstance(dev_type, int):
        return Device(dev_type, dev_id)
    kind = getattr(getattr(dev_type, "kind", None), "name", None)
    if kind is None:
        if not isinstance(dev_type, str) or not dev_type.strip():
            raise TranspileError(f"expected a device type, name or target, got {dev_type!r}")
        kind = dev_type.split()[0]
    if kind not in DEVICE_TYPES:
        raise TranspileError(f"unknown device type {kind!r} (known: {', '.join(sorted(DEVICE_TYPES))})")
    return Device(DEVICE_TYPES[kind], dev_id)


def cpu(dev_id: int = 0) -> Device:
    return Device(1, dev_id)


def cuda(dev_id: int = 0) -> Device:
    return Device(2, dev_id)


gpu = cuda


def opencl(dev_id: int = 0) -> Device:
    return Device(4, dev_id)


def vulkan(dev_id: int = 0) -> Device:
    return Device(7, dev_id)


def metal(dev_id: int = 0) -> Device:
    return Device(8, dev_id)


def rocm(dev_id: int = 0) -> Device:
    return Device(10, dev_id)


def ext_dev(dev_id: int = 0) -> Device:
    return Device(12, dev_id)


# TVM <= 0.7 called devices contexts (relay-aot's `tvm.context("llvm", 0)`).
context = device
