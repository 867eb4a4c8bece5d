"""TVM's `tvm._ffi.base`: TVMError (tests catch `tvm._ffi.base.TVMError`)."""

from ..error import TVMError

__all__ = ["TVMError"]
