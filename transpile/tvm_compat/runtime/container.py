"""TVM's `runtime.container`: ADT (tuples, and VM constructor values) and tuple_object."""

from ...relay.backend.values import ADT, tuple_object

__all__ = ["ADT", "tuple_object"]
