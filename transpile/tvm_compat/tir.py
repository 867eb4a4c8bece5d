"""TVM's `tvm.tir`, passed through to apache-tvm's `tvm.tirx`; `tir.Any()` is Relay's unknown dimension.

Names this module does not define come from `tvm.tirx` (IntImm, Var, …).
"""

from __future__ import annotations

from ..relay.ty import Any

__all__ = ["Any"]


def __getattr__(name):
    import tvm.tirx

    try:
        return getattr(tvm.tirx, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} (apache-tvm's tvm.tirx) has no attribute {name!r}") from None
