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


@functools.lru_cache(maxsize=None)
def compiler_digest() -> str:
    """Everything in the package that shapes a build: passes, backends, runtimes, kernels, registry.

    Part of build keys taken before lowering, when no generated code exists yet to hash."""
    suffixes = {".py", ".h", ".c", ".cc", ".rly"}
    paths = [
        p
        for p in sorted(_PACKAGE.rglob("*"))
        if p.suffix in suffixes and "__pycache__" not in p.parts and "testing" not in p.relative_to(_PACKAGE).parts
    ]
    return source_files_digest(paths)
