"""Plumbing shared by backends that build native libraries: cache root, C++ compiler, toolchain key, TVM dirs, loading, artifacts.

Nothing here imports TVM at module level; `toolchain_key()` in particular stays cheap (package
metadata and one `--version` run, cached), since every build's cache key starts with it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from ..errors import TranspileError
from .base import Artifact

__all__ = [
    "cache_root",
    "cxx",
    "toolchain_key",
    "tvm_include_dirs",
    "tvm_library_dirs",
    "run_compiler",
    "load_library",
    "NativeArtifact",
    "cached_entry",
    "NativeBuildCache",
]

_loaded: dict = {}  # library path -> tvm_ffi Module (a library is loaded once per process)


def cache_root() -> Path:
    """$TRANSPILE_CACHE_DIR, else `transpile` under $XDG_CACHE_HOME or ~/.cache; each backend takes a folder."""
    override = os.environ.get("TRANSPILE_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "transpile"


def cxx() -> str:
    """The C++ compiler: $CXX, else g++."""
    return os.environ.get("CXX", "g++")


@functools.lru_cache(maxsize=None)
def toolchain_key() -> str:
    """Versions of everything that shapes a library (no TVM import: this must stay fast)."""
    from importlib import metadata

    from .. import __version__

    parts = [f"transpile={__version__}"]
    for dist in ("apache-tvm", "apache-tvm-ffi"):
        try:
            parts.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{dist}=?")
    try:
        parts.append(
            subprocess.run([cxx(), "--version"], capture_output=True, text=True, check=True).stdout.split("\n")[0]
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise TranspileError(f"native backends (cpp, tir) need a C++ compiler ({cxx()}): {exc}") from None
    parts.append(_cpu_key())
    return "\n".join(parts)


def _cpu_key() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        import platform

        return platform.machine()
    model = flags = ""
    for line in text.splitlines():
        if line.startswith("model name") and not model:
            model = line.split(":", 1)[1].strip()
        elif line.startswith("flags") and not flags:
            flags = hashlib.sha256(line.encode()).hexdigest()[:16]
    return f"cpu={model} flags={flags}"


def _site_package(name: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise TranspileError(
            f"native backends (cpp, tir) need the Python package {name!r} (apache-tvm, apache-tvm-ffi)"
        )
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=None)
def tvm_include_dirs() -> list[str]:
    """The headers of the tvm-ffi and TVM wheels."""
    return [str(_site_package("tvm_ffi") / "include"), str(_site_package("tvm") / "include")]


@functools.lru_cache(maxsize=None)
def tvm_library_dirs() -> list[str]:
    """Where the wheels' libtvm_ffi.so and libtvm_runtime.so live (linked against and put on the rpath)."""
    return [str(_site_package("tvm_ffi") / "lib"), str(_site_package("tvm") / "lib")]


def run_compiler(args: list[str], what: str, cwd: Path | None = None) -> None:
    """Runs a compiler command; a failure is a TranspileError carrying the end of its stderr."""
    CompilerJob(args, what, cwd=cwd).wait()


class CompilerJob:
    """A compiler command running in the background; `wait()` raises like `run_compiler` on failure."""

    def __init__(self, args: list[str], what: str, cwd: Path | None = None):
        import tempfile

        self.args, self.what = args, what
        self._stderr = tempfile.TemporaryFile()  # a pipe could fill up and stall the compiler
        try:
            self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self._stderr, cwd=cwd)
        except OSError as exc:
            self._stderr.close()
            raise TranspileError(f"{what} failed: cannot run {args[0]}: {exc.strerror or exc}") from None

    def wait(self) -> None:
        code = self._proc.wait()
        self._stderr.seek(0)
        errors = self._stderr.read().decode("utf-8", "replace")
        self._stderr.close()
        if code != 0:
            raise TranspileError(f"{self.what} failed ({' '.join(self.args[:3])} ...):\n{errors[-4000:]}")

    def kill(self) -> None:
        """Stops the command if it still runs (a failure elsewhere made its output useless)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if not self._stderr.closed:
            self._stderr.close()


def cached_entry(backend_name: str, key: str) -> tuple[Path, dict] | None:
    """(directory, info) of the finished cache entry `<cache>/<backend_name>/<key>`, or None.

    A hit marks the entry used (least-recently-used eviction spares it)."""
    directory = cache_root() / backend_name / key
    try:
        info = json.loads((directory / "info.json").read_text())
    except (OSError, ValueError):
        return None  # missing, or damaged: the caller rebuilds
    from .. import cache

    if not cache.touch(directory):  # evicted since it was read: rebuild (a touched entry is spared)
        return None
    return directory, info


class NativeBuildCache:
    """The build-cache hooks of a backend whose artifacts live in `<cache>/<name>/<key>/`
    (mixed into cpp and tir before Backend); `artifact_class` makes the artifact of a hit."""

    artifact_class = None

    def cache_identity(self) -> str:
        """What besides the program and the compiler's code decides a library: the toolchain."""
        return toolchain_key()

    def cached_build(self, key: str):
        hit = cached_entry(self.name, key)
        return self.artifact_class(*hit) if hit else None


def load_library(path: Path):
    """The library as a TVM-FFI module (`tvm_ffi.load_module`), loaded once per process.

    Not `tvm.runtime.load_module`: `import tvm` takes 0.75 s (~3 s with torch installed) that a
    cache hit must not pay, and nothing more is needed — the library fills in its kernels' runtime
    pointers itself (cpp: transpile_rt.h) and tvm_ffi's loader fills those of any library too."""
    from . import runtime_libs

    key = str(Path(path).resolve())
    module = _loaded.get(key)
    if module is None:
        tvm_ffi = runtime_libs.import_tvm_ffi()
        runtime_libs.preload()  # its NEEDED runtime resolves to the wheels', not to copies beside it
        try:
            module = tvm_ffi.load_module(key)
        except Exception as exc:
            raise TranspileError(f"cannot load the native library {key}: {exc}") from None
        _loaded[key] = module
    return module


class NativeArtifact(Artifact):
    """A built native library in a directory with its `info.json` (entry signature, file names).

    Subclasses name their backend, the files an export copies (`exported_files`), the manifest
    data beside `info` (`manifest_data`) and how the checked callable is made (`make_callable`).
    """

    backend_name = ""

    def __init__(self, directory: Path, info: dict):
        super().__init__(self.backend_name, info["entry"])
        self.directory = Path(directory)
        self.info = info
        self._callable = None

    @property
    def library_path(self) -> Path:
        return self.directory / self.info["library"]

    @property
    def module(self):
        """The loaded TVM-FFI module (loaded once per process, without importing tvm)."""
        return load_library(self.library_path)

    def load(self):
        if self._callable is None:
            self._callable = self.make_callable()
        return self._callable

    def make_callable(self):
        raise NotImplementedError

    def profile(self, *args, runs: int = 10, warmup: int = 1):
        """Per-kernel calls, time, share and GFLOP/s of `runs` runs on `args` (a transpile.profiling.Profile).

        Needs a profiling build: `transpile.build(mod, backend=..., profile=True)`."""
        from ..profiling import profile_artifact

        return profile_artifact(self, args, runs=runs, warmup=warmup)

    def exported_files(self) -> list[str]:
        return [self.info["library"]]

    def manifest_data(self) -> dict:
        return {"library": self.info["library"]}

    def write_files(self, directory: Path) -> dict:
        directory = Path(directory)
        for name in self.exported_files():
            shutil.copy2(self.directory / name, directory / name)
        from . import runtime_libs

        # The TVM runtime in lib/, found through the library's $ORIGIN RUNPATH: the directory runs anywhere.
        runtime = runtime_libs.copy_bundled(self.directory, directory)
        (directory / "info.json").write_text(json.dumps(self.info, indent=1, sort_keys=True))
        return {"info": "info.json", **self.manifest_data(), "runtime_libraries": runtime}

    @classmethod
    def from_directory(cls, directory: Path, manifest: dict):
        data = manifest.get("data") or {}
        path = Path(directory) / data.get("info", "info.json")
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise TranspileError(f"cannot read {path}: {exc}") from None
        if not (Path(directory) / info.get("library", "")).is_file():
            raise TranspileError(f"{directory} has no native library {info.get('library')!r}")
        return cls(Path(directory), info)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} entry={self.entry!r} library={str(self.library_path)!r}>"
