"""The part of TVM's `tvm.relay.build_module` that transpile keeps: `bind_params_by_name`."""

from __future__ import annotations

from .bind import bind_params_by_name

__all__ = ["bind_params_by_name"]
