"""CppArtifact: a built native library (plus its C++ source and C header); load() gives the checked callable."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..native import NativeArtifact, tvm_include_dirs

__all__ = ["CppArtifact"]


class CppArtifact(NativeArtifact):
    """The library directory and its info (entry signature, ADT tags, exported names)."""

    backend_name = "cpp"

    @property
    def header_path(self) -> Path | None:
        name = self.info.get("header")
        return self.directory / name if name else None

    @property
    def source(self) -> str:
        return (self.directory / self.info["source"]).read_text(encoding="utf-8")

    @property
    def module(self):
        """The loaded TVM-FFI module: ["transpile_call"], ["<entry>"], W0 (["default"](dev) executors, module-level functions)."""
        return super().module

    def make_callable(self):
        from .boundary import make_native_entry

        function = self.module["transpile_call"]  # looked up once; calls go straight to it
        # Tensor-only entries also export a typed function: no flat arrays to build or read.
        typed = self.module[self.info["export_name"]] if self.info.get("tensor_entry") else None
        return make_native_entry(function, self.info, typed)

    def exported_files(self) -> list[str]:
        files = [self.info["library"], self.info["source"], "transpile_rt.h"]
        if (self.directory / "transpile_rt_common.h").is_file():  # libraries built before the header split lack it
            files.append("transpile_rt_common.h")
        if self.info.get("header"):
            files.append(self.info["header"])
        return files

    def manifest_data(self) -> dict:
        return {"library": self.info["library"], "header": self.info.get("header")}

    def write_files(self, directory: Path) -> dict:
        data = super().write_files(directory)
        if self.info.get("header"):  # a tensor entry: the C API, usable with `-I<directory>` alone
            data["c_headers"] = [self.info["header"], *copy_c_headers(Path(directory))]
            (Path(directory) / "README.txt").write_text(c_api_readme(self.info), encoding="utf-8")
            data["readme"] = "README.txt"
        return data


C_HEADERS = ("dlpack/dlpack.h",)  # what the generated <entry>.h includes beyond the C library


def copy_c_headers(directory: Path) -> list[str]:
    """The headers the C API's header includes, from the wheels' include directories, under `directory`."""
    copied = []
    for name in C_HEADERS:
        source = next(Path(d) / name for d in tvm_include_dirs() if (Path(d) / name).is_file())
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, directory / name)
        copied.append(name)
    return copied


def c_api_readme(info: dict) -> str:
    """How to use an exported library from C: the API, the exact compile and link line, where the runtime is."""
    stem, prefix, header = info["export_name"], info["c_prefix"], info["header"]
    signature = info["signature"]
    params = ", ".join(f"%{p['name']}" for p in signature["params"])
    return f"""lib{stem}.so: @{signature["relay_entry"]}({params}) compiled by transpile (cpp backend)

C API, declared in {header} (argument and result shapes and dtypes are listed there):
  int {prefix}_run(const DLTensor* const* inputs, DLTensor** outputs);   /* 0, or -1 on error */
  const char* transpile_last_error(void);
Outputs are allocated by the caller; inputs need not be aligned.

Compile and link a C program against this directory (DIR: its absolute path):
  gcc -std=c99 your_program.c -IDIR -LDIR -l{stem} -Wl,-rpath,DIR -o your_program
or, for a program that moves along with DIR, -Wl,-rpath,'$ORIGIN/<path from the program to DIR>'.
lib{stem}.so finds the TVM runtime it needs in lib/ (libtvm_runtime.so, libtvm_ffi.so, from
apache-tvm and apache-tvm-ffi, Apache-2.0) through its RUNPATH $ORIGIN/lib, so move the directory
as a whole. Kernels use every CPU unless TVM_NUM_THREADS says otherwise; idle kernel threads
sleep rather than spin (TVM_THREAD_POOL_SPIN_COUNT=0) and are not pinned to cores
(TVM_BIND_THREADS=0) unless those variables are set.

From Python: transpile.load(DIR). (It loads the installed TVM runtime before lib{stem}.so; a
tvm_ffi.load_module of lib{stem}.so done before `import tvm` would instead load the copies in lib/,
and a later `import tvm` would then abort on a second TVM runtime.)
"""
