"""TVM's `relay.backend.te_compiler`: the handle on compiled operator kernels that TVM code clears between builds.

TVM kept lowered kernels in a process-wide cache (`te_compiler.get()`), and tests called
`get().clear()` so that the next build lowered again. transpile lowers each build's kernels afresh
and keeps no such in-process cache: finished libraries live in the on-disk build cache, keyed by
the program, the kernel compiler's sources and the toolchain, so a hit there is exactly what a
fresh lowering would produce. `clear()` therefore has nothing to drop; it is here so that code
written for TVM runs unchanged. To force native rebuilds, clear the disk cache
(`transpile cache clear`, or `transpile.cache.clear()`).
"""

from __future__ import annotations

__all__ = ["TECompiler", "get"]


class TECompiler:
    """The process's kernel compiler as TVM code sees it."""

    def clear(self) -> None:
        """Forget lowered kernels: none are kept in this process (see the module docstring)."""


_COMPILER = TECompiler()


def get() -> TECompiler:
    """The process-wide kernel compiler (one object, as in TVM)."""
    return _COMPILER
