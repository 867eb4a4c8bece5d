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

__all__ = [
    "cache_root",
    "build_library",
    "BuildResult",
    "include_dirs",
    "library_dirs",
    "toolchain_key",
    "compile_count",
]

RUNTIME_DIR = Path(__file__).parent / "runtime"
CXX_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-fwrapv", "-w"]

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


def cache_root() -> Path:
    override = os.environ.get("TRANSPILE_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "transpile"


def _site_package(name: str) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise TranspileError(f"the cpp backend needs the Python package {name!r} (apache-tvm / apache-tvm-ffi)")
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=None)
def include_dirs() -> list[str]:
    return [str(RUNTIME_DIR), str(_site_package("tvm_ffi") / "include"), str(_site_package("tvm") / "include")]


@functools.lru_cache(maxsize=None)
def library_dirs() -> list[str]:
    return [str(_site_package("tvm_ffi") / "lib"), str(_site_package("tvm") / "lib")]


def _cxx() -> str:
    return os.environ.get("CXX", "g++")


@functools.lru_cache(maxsize=None)
def toolchain_key() -> str:
    """Versions of everything that shapes the library (no TVM import: this must stay fast)."""
    from importlib import metadata

    from ... import __version__

    parts = [f"transpile={__version__}"]
    for dist in ("apache-tvm", "apache-tvm-ffi"):
        try:
            parts.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{dist}=?")
    try:
        parts.append(
            subprocess.run([_cxx(), "--version"], capture_output=True, text=True, check=True).stdout.split("\n")[0]
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise TranspileError(f"the cpp backend needs a C++ compiler ({_cxx()}): {exc}") from None
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


def cache_key(lir_text: str, source: str, options: dict) -> str:
    digest = hashlib.sha256()
    for part in (
        "transpile-cpp-v2",
        toolchain_key(),
        json.dumps(options, sort_keys=True, default=str),
        (RUNTIME_DIR / "transpile_rt.h").read_text(),
        " ".join(CXX_FLAGS),
        lir_text,
        source,
    ):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def _build_kernels(kernels, out_dir: Path, schedule: bool):
    from ...kernels.build import build_kernels

    return build_kernels(kernels, str(out_dir), schedule=schedule)


def run_compiler(args: list[str], what: str) -> None:
    global compile_count
    compile_count += 1
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise TranspileError(f"{what} failed ({' '.join(args[:3])} ...):\n{proc.stderr[-4000:]}")


def build_library(generated, lir_text: str, entry: str, signature_info: dict, options: dict) -> BuildResult:
    """The cached library of a generated program (built now on a miss)."""
    root = cache_root() / "cpp"
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
        shutil.copy(RUNTIME_DIR / "transpile_rt.h", work / "transpile_rt.h")
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
        args = [_cxx(), *CXX_FLAGS, "-shared", "-o", str(work / library_name), str(work / source_name)]
        args += [f"-I{d}" for d in include_dirs()] + objects + link + ["-ltvm_runtime", "-ltvm_ffi"]
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
