"""TVM's `tvm.ir.module`: IRModule is transpile's Relay module."""

from ...relay.module import IRModule

__all__ = ["IRModule"]
