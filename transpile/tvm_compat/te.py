"""TVM's `tvm.te`, passed through to apache-tvm's; `size_var` (gone from apache-tvm 0.27) is a plain Var.

Relay code uses `te.var` / `te.size_var` for symbolic dimensions of types. TVM's SizeVar was a
Var known to be non-negative; apache-tvm 0.27 has no such class, so `size_var` returns the
same Var `te.var` does (a dimension is non-negative anyway).
"""

from __future__ import annotations

__all__ = ["size_var"]


def size_var(name="size", dtype="int32", span=None):
    """A symbolic size (TVM's te.size_var): a tvm Var named `name`."""
    import tvm.te

    return tvm.te.var(name, dtype, span) if span is not None else tvm.te.var(name, dtype)


def __getattr__(name):
    import tvm.te

    try:
        return getattr(tvm.te, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} (apache-tvm's tvm.te) has no attribute {name!r}") from None
