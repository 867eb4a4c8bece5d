"""Building the native library: kernels through TVM, the generated C++ through g++, one content-addressed cache.

Cache layout: `<cache>/cpp/<key>/` holds `lib<entry>.so`, `<entry>.cpp`, `<entry>.h` (tensor
entries) and `info.json`. The key hashes the LIR program text (kernel bodies included), the
generated C++, the runtime header, the options and the tool versions (g++, apache-tvm,
apache-tvm-ffi, transpile, host CPU), and is computed before anything is compiled, so a hit runs
neither TVM nor g++. A build happens in a temporary directory renamed into place with one
`os.replace`, so concurrent builds of the same program are safe (the loser discards its copy).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ...errors import TranspileError
from ...kernels.digest import kernel_compiler_digest, source_files_digest
from .. import native

__all__ = [
    "build_library",
    "BuildResult",
    "include_dirs",
    "library_dirs",
    "compile_count",
]

RUNTIME_DIR = Path(__file__).parent / "runtime"
RUNTIME_HEADERS = ("transpile_rt.h", "transpile_rt_common.h")  # what the generated C++ includes
# -ffp-contract=off: a * b + c rounds twice, as numpy does (no fused multiply-add where the ISA has one).
CXX_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-fwrapv", "-ffp-contract=off", "-w"]
PCH_KEEP_DAYS = 7  # precompiled headers of other toolchains unused this long are removed

compile_count = 0  # g++ invocations in this process (tests check that a cache hit runs none)


class BuildResult:
    def __init__(self, directory: Path, info: dict, cached: bool):
        self.directory = directory
        self.info = info
        self.cached = cached

    @property
    def library(self) -> Path:
        return self.directory / self.info["library"]

    @property
    def header(self) -> Path | None:
        name = self.info.get("header")
        return self.directory / name if name else None

    @property
    def source(self) -> Path:
        return self.directory / self.info["source"]


@functools.lru_cache(maxsize=None)
def include_dirs() -> list[str]:
    """This backend's runtime headers, then the TVM wheels' headers."""
    return [str(RUNTIME_DIR), *native.tvm_include_dirs()]


def library_dirs() -> list[str]:
    return native.tvm_library_dirs()


def memory_planner_digest() -> str:
    return source_files_digest([Path(__file__).resolve().parents[2] / "passes" / "memory_plan.py"])


def cache_key(lir_text: str, source: str, options: dict) -> str:
    """Program (LIR and generated C++), options, toolchain, runtime headers and the code that
    produces kernels (schedules, TE lowerings): any change there gives a new library."""
    digest = hashlib.sha256()
    for part in (
        "transpile-cpp-v2",
        native.toolchain_key(),
        kernel_compiler_digest(),
        memory_planner_digest(),
        json.dumps(options, sort_keys=True, default=str),
        "".join((RUNTIME_DIR / name).read_text() for name in RUNTIME_HEADERS),
        " ".join(CXX_FLAGS),
        lir_text,
        source,
    ):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:32]


@functools.lru_cache(maxsize=None)
def _is_gcc() -> bool:
    try:
        text = subprocess.run([native.cxx(), "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    return "Free Software Foundation" in text and "clang" not in text.lower()


def _precompiled_header_key(headers: Path) -> str:
    """Toolchain, flags and the runtime headers' text: g++ checks a .gch's flags, not its sources."""
    digest = hashlib.sha256()
    for part in (native.toolchain_key(), " ".join(CXX_FLAGS), *include_dirs()):
        digest.update(part.encode() + b"\0")
    for name in sorted(p.name for p in headers.glob("*.h")):
        digest.update(name.encode() + b"\0" + (headers / name).read_bytes() + b"\0")
    return digest.hexdigest()[:32]


_failed_precompiled_headers: set = set()  # keys whose header did not precompile: not retried


def precompiled_header_dir() -> str | None:
    """A directory holding `transpile_rt.h.gch`: the runtime header and the tvm-ffi headers it pulls
    in, parsed once per toolchain and runtime (about a third of g++'s time on a small program).

    It is put first on the include path: g++ takes the .gch for `#include <transpile_rt.h>` when it
    was built with the same compiler and flags, and otherwise the header copies beside it, whose
    text the directory's name hashes; so a damaged or foreign .gch can slow a build down but never
    change it. Built once under a file lock (other processes wait, then reuse it) and installed by
    rename. None when the compiler is not GCC or the header does not precompile.
    """
    if os.environ.get("TRANSPILE_NO_PCH") or not _is_gcc():
        return None
    key = _precompiled_header_key(RUNTIME_DIR)
    if key in _failed_precompiled_headers:
        return None
    root = native.cache_root() / "pch"
    final = root / key
    try:
        if (final / "transpile_rt.h.gch").is_file():
            os.utime(final)  # in use: kept by _remove_stale_precompiled_headers
            return str(final)
        root.mkdir(parents=True, exist_ok=True)
        with _file_lock(root / f"{key}.lock"):
            if not (final / "transpile_rt.h.gch").is_file():
                _build_precompiled_header(root, final)
    except (OSError, TranspileError):
        _failed_precompiled_headers.add(key)
        return None  # builds go on without it
    return str(final)


def _build_precompiled_header(root: Path, final: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
    try:
        # From copies (kept beside the .gch) whose text is the key's: an edit racing the build is caught.
        for header in RUNTIME_DIR.glob("*.h"):
            shutil.copy(header, work / header.name)
        if _precompiled_header_key(work) != final.name:
            raise TranspileError("the runtime headers changed while being precompiled")
        args = [native.cxx(), *CXX_FLAGS, *(f"-I{d}" for d in include_dirs()), "-x", "c++-header"]
        args += [str(work / "transpile_rt.h"), "-o", str(work / "transpile_rt.h.gch")]
        run_compiler(args, "precompiling transpile_rt.h")
        os.replace(work, final)
        work = None
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    _remove_stale_precompiled_headers(root, keep=final)


def _remove_stale_precompiled_headers(root: Path, keep: Path) -> None:
    import time

    horizon = time.time() - PCH_KEEP_DAYS * 86400
    for entry in root.iterdir():
        try:
            if entry != keep and entry.is_dir() and not entry.name.startswith(".") and entry.stat().st_mtime < horizon:
                shutil.rmtree(entry, ignore_errors=True)  # a build reading it now keeps its open file
        except OSError:
            pass


class _file_lock:
    """An exclusive advisory lock on `path` (no-op where fcntl is missing)."""

    def __init__(self, path: Path):
        self.path = path
        self.handle = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return self
        self.handle = open(self.path, "a+")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.handle is not None:
            self.handle.close()  # releases the lock
        return False


def _build_kernels(kernels, out_dir: Path, schedule: bool):
    from ...kernels.build import build_kernels

    return build_kernels(kernels, str(out_dir), schedule=schedule)


def run_compiler(args: list[str], what: str) -> None:
    global compile_count
    compile_count += 1
    native.run_compiler(args, what)


def build_library(generated, lir_text: str, entry: str, signature_info: dict, options: dict) -> BuildResult:
    """The cached library of a generated program (built now on a miss)."""
    root = native.cache_root() / "cpp"
    key = cache_key(lir_text, generated.source, options)
    final = root / key
    info_path = final / "info.json"
    if info_path.is_file():
        try:
            return BuildResult(final, json.loads(info_path.read_text()), cached=True)
        except (OSError, ValueError):
            pass  # a damaged entry: rebuild below
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        stem = generated.export_name
        source_name, library_name = f"{stem}.cpp", f"lib{stem}.so"
        (work / source_name).write_text(generated.source, encoding="utf-8")
        for name in RUNTIME_HEADERS:
            shutil.copy(RUNTIME_DIR / name, work / name)
        objects = []
        if generated.extern_kernels:
            lib = _build_kernels(generated.extern_kernels, work, options.get("schedule", True))
            objects.append(str(lib.object_path))
        header_name = None
        if generated.header is not None:
            header_name = f"{stem}.h"
            (work / header_name).write_text(generated.header, encoding="utf-8")
        # -Bsymbolic: kernel symbols (__tvm_ffi_fused_add...) bind inside this library even when another
        # program's library with the same kernel names was loaded into the process before.
        link = ["-Wl,-Bsymbolic"]
        for d in library_dirs():
            link += [f"-L{d}", f"-Wl,-rpath,{d}"]
        args = [native.cxx(), *CXX_FLAGS, "-shared", "-o", str(work / library_name), str(work / source_name)]
        pch = precompiled_header_dir()
        args += [f"-I{d}" for d in ([pch] if pch else []) + include_dirs()]
        args += objects + link + ["-ltvm_runtime", "-ltvm_ffi"]
        run_compiler(args, "compiling the generated C++")
        info = {
            "library": library_name,
            "source": source_name,
            "header": header_name,
            "entry": entry,
            "export_name": generated.export_name,
            "c_prefix": generated.c_prefix,
            "tensor_entry": generated.tensor_entry,
            "key": key,
            **signature_info,
        }
        (work / "info.json").write_text(json.dumps(info, indent=1, sort_keys=True))
        try:
            os.replace(work, final)
        except OSError:
            if not info_path.is_file():  # not a concurrent winner: a real failure
                raise
        else:
            work = None
        return BuildResult(final, json.loads(info_path.read_text()), cached=False)
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
