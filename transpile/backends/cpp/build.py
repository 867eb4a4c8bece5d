"""Building the native library: kernels through TVM, the generated C++ through g++, one content-addressed cache.

Cache layout: `<cache>/cpp/<key>/` holds `lib<entry>.so`, `<entry>.cpp`, `<entry>.h` (tensor
entries), `info.json` and `lib/` (symlinks to the TVM runtime, found through the library's
RUNPATH `$ORIGIN/lib`; see runtime_libs). The key hashes the LIR program text (kernel bodies included), the
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
from .. import native, runtime_libs

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


def _build_kernels(kernels, out_dir: Path, schedule: bool, tune: int = 0):
    from ...kernels.build import build_kernels

    return build_kernels(kernels, str(out_dir), schedule=schedule, tune=tune)


def run_compiler(args: list[str], what: str, cwd: Path | None = None) -> None:
    global compile_count
    compile_count += 1
    native.run_compiler(args, what, cwd=cwd)


def start_compiler(args: list[str], what: str, cwd: Path | None = None) -> "native.CompilerJob":
    """Starts a compiler command in the background (it runs while TVM compiles the kernels)."""
    global compile_count
    compile_count += 1
    return native.CompilerJob(args, what, cwd=cwd)


class ProgramCompile:
    """Compiles the generated C++ to an object on a background thread (precompiling the runtime header first if needed)."""

    def __init__(self, source: Path, output: Path):
        import threading

        self._job = None
        self._error = None
        self._cancelled = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(source, output), daemon=True)
        self._thread.start()

    def _run(self, source: Path, output: Path) -> None:
        try:
            pch = precompiled_header_dir()
            includes = [f"-I{d}" for d in ([pch] if pch else []) + include_dirs()]
            with self._lock:
                if self._cancelled:
                    return
                self._job = start_compiler(
                    [native.cxx(), *CXX_FLAGS, "-c", "-o", str(output), str(source), *includes],
                    "compiling the generated C++",
                )
            self._job.wait()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            self._error = exc

    def wait(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        """Stops the compiler if it still runs (a failure elsewhere made its output useless)."""
        with self._lock:
            self._cancelled = True
            if self._job is not None:
                self._job.kill()


def weights_object(constants, layout, work: Path) -> Path | None:
    """weights.o: the constants' bytes, placed by the assembler (never parsed as C++); None without any."""
    from ..weights import BLOB_NAME, incbin_assembly, write_blob
    from .codegen import WEIGHTS_SYMBOL

    if not layout:
        return None
    write_blob(constants, layout, work / BLOB_NAME)
    (work / "weights.s").write_text(incbin_assembly(WEIGHTS_SYMBOL, BLOB_NAME))
    run_compiler([native.cxx(), "-c", "-x", "assembler", "weights.s", "-o", "weights.o"], "assembling the weights", cwd=work)
    (work / BLOB_NAME).unlink()  # the object holds the bytes now
    return work / "weights.o"


def build_library(
    generated, lir_text: str, entry: str, signature_info: dict, options: dict, source_key: str | None = None
) -> BuildResult:
    """The cached library of a generated program (built now on a miss).

    `source_key`: the framework's key taken from the Relay module before lowering; without it the
    key comes from the generated code and the weights' bytes."""
    from ... import cache, progress
    from ..weights import weights_digest

    root = native.cache_root() / "cpp"
    key = source_key or cache_key(lir_text, generated.source + weights_digest(generated.weights), options)
    final = root / key
    info_path = final / "info.json"
    if info_path.is_file():
        try:
            result = BuildResult(final, json.loads(info_path.read_text()), cached=True)
            if cache.touch(final):  # False: evicted since the check; rebuilt below
                return result
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
        header_name = None
        if generated.header is not None:
            header_name = f"{stem}.h"
            (work / header_name).write_text(generated.header, encoding="utf-8")
        # The program's C++ compiles (after the runtime header is precompiled, once per toolchain)
        # while TVM builds the kernels: the two big steps share the machine's cores.
        program_job = ProgramCompile(work / source_name, work / "program.o")
        try:
            objects = [str(work / "program.o")]
            weights = weights_object(generated.weights, generated.weights_layout, work)
            if weights is not None:
                objects.append(str(weights))
            if generated.extern_kernels:
                lib = _build_kernels(
                    generated.extern_kernels, work, options.get("schedule", True), options.get("tune", 0)
                )
                objects.append(str(lib.object_path))
            with progress.stage("C++ compile"):
                program_job.wait()
        finally:
            program_job.cancel()
        # -Bsymbolic: kernel symbols (__tvm_ffi_fused_add...) bind inside this library even when another
        # program's library with the same kernel names was loaded into the process before.
        # RUNPATH $ORIGIN/lib (no path into the build's environment); lib/ links to the wheels' runtime.
        runtime_libs.link_into(work)
        link = ["-Wl,-Bsymbolic", *runtime_libs.link_flags()]
        with progress.stage("link"):
            args = [native.cxx(), "-shared", "-fPIC", "-o", str(work / library_name), *objects]
            run_compiler(args + link + ["-ltvm_runtime", "-ltvm_ffi"], "linking the library")
        for leftover in ("program.o", "weights.o", "weights.s", "kernels.o"):
            (work / leftover).unlink(missing_ok=True)
        info = {
            "library": library_name,
            "source": source_name,
            "header": header_name,
            "entry": entry,
            "export_name": generated.export_name,
            "c_prefix": generated.c_prefix,
            "tensor_entry": generated.tensor_entry,
            "key": key,
            "weights_bytes": generated.weights_layout.size,
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
        cache.evict(keep=[final])
        return BuildResult(final, json.loads(info_path.read_text()), cached=False)
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
