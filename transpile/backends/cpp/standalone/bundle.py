"""Writing a standalone source bundle: generated C++, `c`-target kernels, runtime, Makefile, README, manifest.

The directory is filled safely: everything is produced in a temporary directory first (TVM and
the code generator may fail half-way), then moved in. A non-empty directory is only written
into when it holds a previous bundle (its transpile-bundle.json), and then only the files that
bundle listed, plus what its Makefile builds, are replaced; anything else is left alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from ....errors import TranspileError, UnsupportedFeatureError
from ....lir.types import type_text
from ....relay.ty import AnyDim
from ..build import RUNTIME_DIR
from ...weights import BLOB_NAME, incbin_assembly, write_blob
from ..codegen import WEIGHTS_SYMBOL
from ..codegen.marshal import tensor_signature
from .texts import demo_source, makefile, products, readme

__all__ = ["Bundle", "write_bundle", "MANIFEST", "SHIM_FUNCTIONS"]

MANIFEST = "transpile-bundle.json"
FORMAT = "transpile-standalone-bundle"

# The runtime files copied into <bundle>/runtime (source path under RUNTIME_DIR -> bundle path).
RUNTIME_FILES = {
    "transpile_rt_standalone.h": "runtime/transpile_rt_standalone.h",
    "transpile_rt_common.h": "runtime/transpile_rt_common.h",
    "standalone/tvm_shim.h": "runtime/tvm_shim.h",
    "standalone/tvm_shim.c": "runtime/tvm_shim.c",
    "standalone/dlpack/dlpack.h": "runtime/dlpack/dlpack.h",
}

# TVM C functions kernels.c may call that runtime/tvm_shim.c implements.
SHIM_FUNCTIONS = frozenset(
    {
        "TVMBackendAllocWorkspace",
        "TVMBackendFreeWorkspace",
        "TVMBackendParallelLaunch",
        "TVMBackendParallelBarrier",
        "TVMFFIErrorSetRaisedFromCStr",
        "TVMFFIErrorSetRaisedFromCStrParts",
    }
)

_TVM_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]tvm/[^>"]*[>"]\s*$', re.MULTILINE)
_TVM_CALL = re.compile(r"\b(TVM[A-Za-z0-9_]*)\s*\(")
_DL_CODES = {"int": "kDLInt", "uint": "kDLUInt", "float": "kDLFloat", "bfloat": "kDLBfloat"}


@dataclass
class Bundle:
    """A written bundle: its directory and manifest (entry, C API prefix, tensors, files)."""

    directory: Path
    manifest: dict

    @property
    def name(self) -> str:
        return self.manifest["name"]

    def path(self, file: str) -> Path:
        return self.directory / file


def _dtype_code(dtype: str) -> tuple[str, int]:
    if dtype == "bool":
        return "kDLBool", 8
    for prefix in ("uint", "int", "bfloat", "float"):
        if dtype.startswith(prefix) and dtype[len(prefix) :].isdigit():
            return _DL_CODES[prefix], int(dtype[len(prefix) :])
    raise UnsupportedFeatureError(f"tensors of dtype {dtype} in the standalone C API", "cpp")


def _tensor_specs(names, types) -> list[dict]:
    specs = []
    for name, ty in zip(names, types):
        shape = []
        for d in ty.shape:
            if isinstance(d, AnyDim):
                raise UnsupportedFeatureError(
                    "dynamic_shapes", "cpp", detail=f"the standalone bundle's tensor {name} has a dynamic dimension"
                )
            shape.append(int(d))
        specs.append({"name": name, "shape": shape, "dtype": ty.dtype})
    return specs


def portable_kernels(c_text: str) -> str:
    """kernels.c with its TVM includes replaced by the shim; refuses kernels calling other TVM functions."""
    missing = sorted({name for name in _TVM_CALL.findall(c_text) if name not in SHIM_FUNCTIONS})
    if missing:
        raise UnsupportedFeatureError(
            "operators whose TVM kernels call back into the TVM runtime "
            f"({', '.join(missing)}) in a standalone bundle",
            "cpp",
        )
    first = True

    def replace(match):
        nonlocal first
        if first:
            first = False
            return '#include "tvm_shim.h"  /* was TVM headers: the bundle has no TVM */'
        return ""

    return stack_workspaces(_TVM_INCLUDE.sub(replace, c_text))


# TVM's `c` target allocates every scratch buffer, even a conv's few-register accumulator, through
# TVMBackendAllocWorkspace. A heap pointer may alias the kernel's inputs, so gcc keeps the
# accumulator in memory and will not vectorize the loops that update it (-O2: not at all, -O3: only
# behind run-time alias checks). Small ones become local arrays, as TVM's LLVM path does below its
# stack limit. Measured at -O2: the bench MLP (batch 64) 15 ms -> 4.4 ms; the bench CNN needs
# this and guard-free conv tiles (schedules/conv.py) together: 2.6 ms -> 0.75 ms.
STACK_WORKSPACE_MAX_BYTES = 1024
_WORKSPACE_ALLOC = re.compile(
    r"(?P<indent>[ \t]*)(?P<type>\w+)\* (?P<name>\w+) = \(\((?P=type)\*\)\(\((?P=type)\*\)"
    r"TVMBackendAllocWorkspace\(1, dev_id, \(uint64_t\)(?P<bytes>\d+)ULL, \d+, (?P<bits>\d+)\)\)\);\n"
    r"[ \t]*if \((?P=name) == NULL\) \{\n[ \t]*return -1;\n[ \t]*\}\n"
)


def stack_workspaces(c_text: str) -> str:
    """Workspaces of at most STACK_WORKSPACE_MAX_BYTES become local arrays (their frees are dropped)."""
    out, pos = [], 0
    for match in _WORKSPACE_ALLOC.finditer(c_text):
        size, item = int(match["bytes"]), int(match["bits"]) // 8
        if match.start() < pos or item == 0 or size % item or size > STACK_WORKSPACE_MAX_BYTES:
            continue
        free_call = rf"TVMBackendFreeWorkspace\(1, dev_id, {match['name']}\)"
        free_block = rf"[ \t]*if \({free_call} != 0\) \{{\n[ \t]*return -1;\n[ \t]*\}}\n"
        free = re.compile(free_block).search(c_text, match.end())
        if free is None:
            continue
        out.append(c_text[pos : match.start()])
        out.append(f"{match['indent']}{match['type']} {match['name']}[{size // item}] __attribute__((aligned(64)));\n")
        out.append(c_text[match.end() : free.start()])
        pos = free.end()
    out.append(c_text[pos:])
    return "".join(out)


def _entry_signature(program) -> str:
    entry = program.entry_function
    params = ", ".join(f"%{p.name}: {type_text(p.type)}" for p in entry.params)
    return f"@{program.entry}({params}) -> {type_text(entry.ret)}"


def _contents(program, work: Path, schedule: bool, verify: bool) -> dict:
    """Writes every bundle file into `work`; returns the manifest."""
    from .... import __version__
    from ....kernels.build import build_c_source
    from ....relay.deep import run_deep
    from ..codegen import generate

    entry = program.entry_function
    generated = run_deep(generate, program, verify, True)  # raises for entries that are not tensor-only
    inputs, outputs = tensor_signature(entry)
    name = generated.export_name
    input_specs = _tensor_specs([p.name for p in entry.params], inputs)
    output_specs = _tensor_specs([f"output{i}" for i in range(len(outputs))], outputs)
    files = {
        "program.cc": generated.source,
        f"{name}.h": generated.header,
        "Makefile": makefile(name, __version__, weights=bool(generated.weights_layout)),
        "demo.c": demo_source(name, generated.c_prefix, input_specs, output_specs, _dtype_code),
    }
    c_path = build_c_source(generated.extern_kernels, work / ".kernels", schedule)
    files["kernels.c"] = portable_kernels(c_path.read_text())
    shutil.rmtree(work / ".kernels")
    files["README.txt"] = readme(
        name, generated.c_prefix, program.entry, _entry_signature(program), input_specs, output_specs, __version__
    )
    if generated.weights_layout:
        files["weights.s"] = incbin_assembly(WEIGHTS_SYMBOL, BLOB_NAME)
    for file, text in files.items():
        (work / file).write_text(text, encoding="utf-8")
    if generated.weights_layout:
        write_blob(generated.weights, generated.weights_layout, work / BLOB_NAME)
        files[BLOB_NAME] = None
    for source, target in RUNTIME_FILES.items():
        (work / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(RUNTIME_DIR / source, work / target)
    manifest = {
        "format": FORMAT,
        "format_version": 1,
        "transpile_version": __version__,
        "tvm_version": _tvm_version(),
        "entry": program.entry,
        "signature": _entry_signature(program),
        "name": name,
        "c_prefix": generated.c_prefix,
        "inputs": input_specs,
        "outputs": output_specs,
        "files": sorted(list(files) + list(RUNTIME_FILES.values()) + [MANIFEST]),
        "products": products(name),
    }
    (work / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def _tvm_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("apache-tvm")
    except metadata.PackageNotFoundError:
        return "?"


def _previous_manifest(directory: Path) -> dict | None:
    """The manifest of the bundle in `directory`, None if it is empty; refuses anything else."""
    if not directory.exists():
        return None
    if not directory.is_dir():
        raise TranspileError(f"cannot write a bundle to {directory}: it exists and is not a directory")
    entries = list(directory.iterdir())
    if not entries:
        return None
    manifest_path = directory / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise TranspileError(
            f"refusing to write a bundle into {directory}: it is not empty and holds no previous bundle "
            f"({MANIFEST}); choose a new or empty directory"
        )
    return manifest


def _owned_paths(directory: Path, manifest: dict) -> list[Path]:
    """The files of a previous bundle (its listed files and build products) that may be replaced."""
    root = directory.resolve()
    out = []
    for name in list(manifest.get("files", [])) + list(manifest.get("products", [])):
        path = (directory / str(name)).resolve()
        if root in path.parents and path.is_file():
            out.append(path)
    return out


def write_bundle(program, out_dir, *, schedule: bool = True, verify: bool = True) -> Bundle:
    """Write the standalone source bundle of the LIR `program` to `out_dir` (see the module docstring)."""
    directory = Path(out_dir).resolve()
    _previous_manifest(directory)  # refuse early, before the slow part
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = directory.parent / f".{directory.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    work.mkdir(0o777)  # (the umask applies, as for any directory the user creates)
    try:
        manifest = _contents(program, work, schedule, verify)
        previous = _previous_manifest(directory)  # again: another process may have written meanwhile
        try:
            if not directory.exists():
                os.replace(work, directory)
                work = None
            else:
                if previous is not None:
                    for path in _owned_paths(directory, previous):
                        path.unlink()
                for file in manifest["files"]:
                    target = directory / file
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(work / file, target)
        except OSError as exc:
            raise TranspileError(f"cannot write the bundle to {directory}: {exc}") from None
        return Bundle(directory, manifest)
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
