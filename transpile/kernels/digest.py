"""A digest of the code that decides what a compiled kernel is, for build-cache keys.

Kernels depend on more than the program text: the schedules, the TE lowering, and every
operator's `te_impl` in the registry. A cache keyed without them would hand out kernels built by
older code after an edit or an upgrade that kept the version number.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__all__ = ["kernel_compiler_digest", "source_files_digest"]

_PACKAGE = Path(__file__).resolve().parents[1]  # transpile/


def source_files_digest(paths) -> str:
    """sha256 over each file's path (relative to the package) and bytes, in the given order."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path).resolve()
        digest.update(str(path.relative_to(_PACKAGE)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _python_sources(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts]


@functools.lru_cache(maxsize=None)
def kernel_compiler_digest() -> str:
    """The kernel compiler (transpile/kernels) and the operator registry with its TE lowerings."""
    return source_files_digest(_python_sources(_PACKAGE / "kernels") + _python_sources(_PACKAGE / "relay" / "op"))
