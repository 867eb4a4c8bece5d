"""TVM's `runtime.Module` for what transpile's executors produce: named functions, export, timing.

TVM handed out its VM executable, the VM itself and compiled kernel libraries as runtime modules:
`module["name"]` is a function, `export_library(path)` writes a file `runtime.load_module(path)`
reads back, `time_evaluator(name, dev, ...)` times a function. Here a module is a table of Python
callables plus, for the exportable kinds, the bytes its file holds.
"""

from __future__ import annotations

import time
from pathlib import Path

from ...errors import TranspileError

__all__ = ["Module", "load_module", "ModuleFileError"]

# The first bytes of every file export_library writes; load_module recognises the kind by them.
FILE_MAGIC = b"TRANSPILE-MODULE\n"


class ModuleFileError(TranspileError):
    """A file runtime.load_module cannot read: not written by export_library, or damaged."""


class Module:
    """A runtime module: `type_key`, functions by name, and (when exportable) its file contents."""

    def __init__(self, type_key: str, functions: dict, payload=None, owner=None):
        self.type_key = type_key
        self._functions = dict(functions)
        self._payload = payload  # () -> bytes written after FILE_MAGIC and the type key, or None
        self.owner = owner  # the transpile object behind the module (an Executable, a VirtualMachine)
        self.imported_modules: list = []

    def __repr__(self):
        return f"Module({self.type_key})"

    def get_function(self, name: str, query_imports: bool = False):
        function = self._functions.get(name)
        if function is None:
            raise TranspileError(
                f"the {self.type_key} module has no function {name!r} (it has {', '.join(sorted(self._functions))})"
            )
        return function

    def __getitem__(self, name: str):
        if not isinstance(name, str):
            raise TranspileError(f"module functions are looked up by name, got {type(name).__name__}")
        return self.get_function(name)

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        return name in self._functions

    def export_library(self, file_name, fcompile=None, addons=None, workspace_dir=None, **kwargs):
        """Writes the module to `file_name` (any name: it is transpile's own format, not a shared library)."""
        if self._payload is None:
            raise TranspileError(f"a {self.type_key} module cannot be exported")
        data = FILE_MAGIC + self.type_key.encode() + b"\n" + self._payload()
        Path(file_name).write_bytes(data)
        return str(file_name)

    def save(self, file_name, fmt=""):
        self.export_library(file_name)

    def time_evaluator(self, func_name, dev=None, number=10, repeat=1, min_repeat_ms=0, **kwargs):
        """A function running `func_name` `number` times per measurement, `repeat` measurements, as a BenchmarkResult."""
        from tvm.runtime.module import BenchmarkResult

        function = self.get_function(func_name)
        number, repeat = max(int(number), 1), max(int(repeat), 1)

        def evaluate(*args):
            results = []
            for _ in range(repeat):
                runs, start = 0, time.perf_counter()
                while True:
                    for _ in range(number):
                        function(*args)
                    runs += number
                    elapsed = time.perf_counter() - start
                    if elapsed * 1000 >= (min_repeat_ms or 0):
                        break
                results.append(elapsed / runs)
            return BenchmarkResult(results)

        return evaluate


_LOADERS: dict = {}


def register_loader(type_key: str, loader) -> None:
    """`loader(payload bytes, path) -> Module` for files whose module has `type_key`."""
    _LOADERS[type_key] = loader


def load_module(path, fmt="") -> Module:
    """TVM's runtime.load_module: the module export_library wrote to `path`."""
    from . import vm_serialize  # noqa: F401 - registers the VM executable's loader

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ModuleFileError(f"cannot read module file {path}: {exc.strerror}") from None
    if not data.startswith(FILE_MAGIC):
        raise ModuleFileError(
            f"{path} was not written by export_library of a transpile module (TVM's compiled .so/.tar "
            "libraries cannot be loaded: compile the Relay program with transpile instead)"
        )
    type_key, newline, payload = data[len(FILE_MAGIC) :].partition(b"\n")
    loader = _LOADERS.get(type_key.decode(errors="replace"))
    if not newline or loader is None:
        raise ModuleFileError(f"{path} holds a module of unknown kind {type_key[:40]!r}")
    return loader(payload, str(path))
