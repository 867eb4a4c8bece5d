"""TVM's `runtime.vm`: the VirtualMachine and its Executable (see transpile.relay.backend.vm)."""

from ...relay.backend.vm import Executable, VirtualMachine

__all__ = ["Executable", "VirtualMachine"]
