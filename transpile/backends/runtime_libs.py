"""The TVM runtime libraries a native library needs: how it is linked to them, finds them, and ships them.

A library built by the cpp or tir backend needs libtvm_ffi.so and libtvm_runtime.so (its NEEDED
entries, by soname). It carries no absolute path into the build's environment: its RUNPATH is
`$ORIGIN/lib:$ORIGIN`, and the directory beside it holds `lib/` with the two libraries — symlinks
to the installed wheels in the build cache, real copies (3.3 MB + 2.5 MB) in an exported artifact —
so a C program linking it runs wherever the directory is copied.

Inside Python the wheels' own libraries are loaded first (`preload`): the dynamic loader matches a
NEEDED entry against loaded libraries by soname, so a library's dependencies resolve to the very
runtime `import tvm_ffi` / `import tvm` use, never to the copies in lib/ (two TVM runtimes in one
process would mean two registries).
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

from ..errors import TranspileError

__all__ = [
    "RUNTIME_LIBRARIES",
    "LIB_DIR",
    "link_flags",
    "link_into",
    "wheel_library",
    "bundled_files",
    "copy_bundled",
    "preload",
]

RUNTIME_LIBRARIES = ("libtvm_ffi.so", "libtvm_runtime.so")  # load order: the runtime needs tvm_ffi
LIB_DIR = "lib"  # beside the library, on its RUNPATH


def wheel_library(name: str) -> Path:
    """The installed wheels' copy of runtime library `name`."""
    from .native import tvm_library_dirs

    for directory in tvm_library_dirs():
        path = Path(directory) / name
        if path.is_file():
            return path
    raise TranspileError(f"{name} is not in the apache-tvm / apache-tvm-ffi wheels ({', '.join(tvm_library_dirs())})")


def link_flags() -> list[str]:
    """Linker flags for a library needing the runtime: the wheels' directories to link against, and a
    RUNPATH relative to the library (never the build's absolute paths)."""
    from .native import tvm_library_dirs

    flags = [f"-L{d}" for d in tvm_library_dirs()]
    # --enable-new-dtags: RUNPATH (overridable by LD_LIBRARY_PATH), not the legacy RPATH.
    return flags + ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/" + LIB_DIR + ":$ORIGIN"]


def link_into(directory: Path) -> None:
    """`directory/lib/`: symlinks to the wheels' runtime libraries, so a library built in `directory`
    (a build cache entry) also runs from C there; an export copies their targets."""
    lib = Path(directory) / LIB_DIR
    lib.mkdir(exist_ok=True)
    for name in RUNTIME_LIBRARIES:
        link = lib / name
        if not link.exists():
            os.symlink(wheel_library(name), link)


def bundled_files(directory: Path) -> dict[str, Path]:
    """What an export of the library in `directory` carries beside it: `lib/<runtime library>` ->
    the file to copy (the build directory's link target, else the installed wheels' file)."""
    out = {}
    for name in RUNTIME_LIBRARIES:
        local = Path(directory) / LIB_DIR / name
        out[f"{LIB_DIR}/{name}"] = local.resolve() if local.is_file() else wheel_library(name)
    return out


def copy_bundled(directory: Path, destination: Path) -> list[str]:
    """Copies `bundled_files(directory)` into `destination`; returns their relative names."""
    names = []
    for name, source in bundled_files(directory).items():
        target = Path(destination) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        names.append(name)
    return names


def import_tvm_ffi():
    """`import tvm_ffi`, without the `import torch` (~0.8 s) apache-tvm-ffi 0.1.14 does first whenever
    torch is installed (a work-around for one Windows symbol clash); nothing here uses torch, and a
    cache hit must stay fast. torch stays importable afterwards, and an already imported one is kept."""
    import sys

    if "tvm_ffi" in sys.modules or "torch" in sys.modules:
        import tvm_ffi

        return tvm_ffi
    sys.modules["torch"] = None  # `import torch` raises ImportError, which tvm_ffi catches
    try:
        import tvm_ffi
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return tvm_ffi


@functools.lru_cache(maxsize=None)
def preload() -> None:
    """Loads the installed wheels' runtime libraries into this process, once, before a library of
    ours (see the module docstring). Without the tvm wheel a library falls back on its lib/ copies."""
    import ctypes

    import_tvm_ffi()  # loads the wheel's libtvm_ffi.so

    for name in RUNTIME_LIBRARIES:
        try:
            path = wheel_library(name)
        except TranspileError:
            continue
        # RTLD_GLOBAL as `import tvm` does; loading the same file again later is a no-op.
        ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
