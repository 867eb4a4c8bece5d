"""TVM's `tvm.script` (TVMScript), passed through to apache-tvm's; `tvm.script.tir` is its `tirx` dialect.

Names this package does not define come from apache-tvm's `tvm.script` (ir_builder, parser, …).
"""

from __future__ import annotations

import importlib

__all__ = ["tir"]


def __getattr__(name):
    if name == "tir":
        return importlib.import_module(".tir", __name__)
    import tvm.script

    try:
        return getattr(tvm.script, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} (apache-tvm's tvm.script) has no attribute {name!r}") from None
