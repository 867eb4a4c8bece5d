"""TVM's `tvm.script.tir` (`from tvm.script import tir as T`): apache-tvm 0.27's `tvm.script.tirx`.

apache-tvm renamed the TIR dialect to tirx; its parser, `T.prim_func` and the dtype constructors
(`T.int32(1)` → an IntImm) are used as they are.
"""

from __future__ import annotations


def __getattr__(name):
    from tvm.script import tirx

    try:
        return getattr(tirx, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} (apache-tvm's tvm.script.tirx) has no attribute {name!r}") from None
