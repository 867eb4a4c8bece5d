"""TVM's `tvm._ffi`, for the one name Relay test code reaches through it: base.TVMError."""

from . import base

__all__ = ["base"]
