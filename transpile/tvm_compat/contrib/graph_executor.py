"""TVM's `tvm.contrib.graph_executor`: GraphModule over what `relay.build(...)["default"](dev)` returns."""

from ...relay.backend.graph_executor import GraphModule, create

__all__ = ["GraphModule", "create"]
