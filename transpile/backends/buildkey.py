"""Build-cache keys taken from the typed Relay module, before any lowering or code generation.

A key hashes (sha256) what decides a library: the backend, the entry, the options, the module's
text (as the printer writes it, which re-parses to a structurally equal module), every constant's
dtype, shape and bytes, the toolchain (compilers, TVM, CPU) and the compiler's own code. Nothing
here imports TVM or the lowering pipeline, so a cache hit stays cheap.
"""

from __future__ import annotations

import hashlib
import json

__all__ = ["module_fingerprint", "source_key"]

KEY_VERSION = "transpile-source-key-v1"


def module_fingerprint(mod, entry: str) -> str:
    """sha256 of `mod`'s printed text and constants, for `entry`."""
    from ..relay.deep import run_deep
    from ..relay.printer.exprs import Printer
    from .weights import little_endian, raw_bytes

    printer = Printer(show_types=False)
    text = run_deep(printer.module, mod)
    digest = hashlib.sha256()
    digest.update(f"{KEY_VERSION}\0entry={entry}\0".encode())
    digest.update(text.encode("utf-8"))
    for constant in printer.meta.constants:
        value = little_endian(constant.data)
        digest.update(f"\0{value.dtype.str}:{value.shape}\0".encode())
        digest.update(raw_bytes(value))
    return digest.hexdigest()


def source_key(backend_name: str, mod, entry: str, options: dict, toolchain: str) -> str:
    """The cache key of building `entry` of the typed module `mod` with `backend_name` and `options`."""
    from ..kernels.digest import compiler_digest

    digest = hashlib.sha256()
    for part in (
        KEY_VERSION,
        backend_name,
        toolchain,
        compiler_digest(),
        json.dumps(options, sort_keys=True, default=repr),
        module_fingerprint(mod, entry),
    ):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    if options.get("profile"):  # a profiling build reports source lines: where each call sits matters
        from ..profiling import source_positions_digest

        digest.update(source_positions_digest(mod).encode())
    return digest.hexdigest()[:32]
