"""TVM's `tvm.contrib.cudnn`: transpile's executors run on the CPU, so cuDNN is never available to them."""

from __future__ import annotations

__all__ = ["exists"]


def exists() -> bool:
    """Whether the executors can offload to cuDNN (TVM's cudnn.exists()): never, they target llvm/cpu."""
    return False
