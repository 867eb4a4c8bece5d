"""Building a tir library: tvm.compile, the weights blob, a plain-C program description, the generic shim, one link.

Cache layout: `<cache>/tir/<key>/` holds `lib<entry>.so`, `<entry>.tir.py` (the TVMScript),
`program.c`, `info.json` and `lib/` (symlinks to the TVM runtime, see runtime_libs);
`<cache>/tir/shim-<hash>.o` is the generic shim (tir_shim.cc), compiled once per toolchain. The
key is the framework's source key, taken from the Relay module before lowering (see
Backend.cached_build), or else hashes the LIR program text, the weights' bytes, the options, the
toolchain (native.toolchain_key) and the sources that shape the library; either way a hit lowers
and compiles nothing.

A build happens in a private temporary directory renamed into place with one `os.replace`, so
concurrent builds of the same key are safe (the loser discards its copy). Everything a build
writes stays in that directory and is named relative to it: the weights blob is assembled with
the directory as working directory, and deleted only after its own assembler finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

from ... import cache, progress
from ...kernels.digest import kernel_compiler_digest, source_files_digest
from .. import native, runtime_libs

__all__ = ["build_library", "BuildResult", "program_c", "compile_count"]

RUNTIME_DIR = Path(__file__).parent / "runtime"
CXX_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-w"]
WEIGHTS_SYMBOL = "transpile_weights"  # hidden: every library has its own
# An undefined symbol is a link error (-z defs), and a library binds every symbol when loaded
# (-z now): a missing one can fail a build or a load, never a call that kills the process.
LINK_CHECKS = ["-Wl,-z,defs", "-Wl,-z,now"]

compile_count = 0  # tvm.compile runs in this process (tests check that a cache hit runs none)


class BuildResult:
    def __init__(self, directory: Path, info: dict, cached: bool):
        self.directory = directory
        self.info = info
        self.cached = cached


def _sources_digest() -> str:
    """The code that shapes a library: this backend's lowering, build and shim, the shared kernel
    compiler with the operators' TE lowerings, and the memory planner (not the Python boundary)."""
    here = Path(__file__).parent
    package = Path(__file__).parents[2]
    paths = [here / "build.py", package / "passes" / "memory_plan.py"]
    for root in (here / "lowering", here / "runtime"):
        paths += [
            p for p in sorted(root.rglob("*")) if p.suffix in (".py", ".cc", ".h") and "__pycache__" not in p.parts
        ]
    return source_files_digest(paths) + kernel_compiler_digest()


def cache_key(lir_text: str, options: dict, weights: str = "") -> str:
    """The library's key from the LIR (when the framework gave no source key); `weights` is the
    constants' weights_digest (the LIR text only names them)."""
    digest = hashlib.sha256()
    toolchain = native.toolchain_key()
    parts = ("transpile-tir-v2", toolchain, _sources_digest(), json.dumps(options, sort_keys=True), lir_text, weights)
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:32]


class ShimObject:
    """The compiled generic shim, shared by every library: found in `root`, or compiled by g++ in
    the background (a few seconds, while TVM compiles the program) and installed by rename."""

    def __init__(self, root: Path):
        digest = hashlib.sha256(native.toolchain_key().encode())
        for name in ("tir_shim.cc", "tir_program.h"):
            digest.update((RUNTIME_DIR / name).read_bytes())
        self.root = root
        self.path = root / f"shim-{digest.hexdigest()[:24]}.o"
        self.job = self.tmp = None
        if not self.path.is_file():
            self._start()

    def _start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(suffix=".o", dir=self.root)
        os.close(fd)
        args = [native.cxx(), *CXX_FLAGS, "-c", str(RUNTIME_DIR / "tir_shim.cc"), "-o", self.tmp]
        args += [f"-I{d}" for d in native.tvm_include_dirs()] + [f"-I{RUNTIME_DIR}"]
        try:
            self.job = native.CompilerJob(args, "compiling the tir shim")
        except BaseException:
            self.close()
            raise

    def wait(self) -> Path:
        """The object's path, once compiled (again, if `transpile cache clear` took it meanwhile)."""
        if self.job is None and not self.path.is_file():
            self._start()
        if self.job is not None:
            try:
                self.job.wait()
                os.replace(self.tmp, self.path)  # atomic: concurrent builds install the same bytes
            finally:
                self.close()
        return self.path

    def place_in(self, work: Path) -> Path:
        """A private link to the object in `work`: what another process does to the shared one
        (`transpile cache clear`) cannot reach a build using it."""
        private = work / "shim.o"
        try:
            os.link(self.wait(), private)
        except OSError:  # no hard links here
            shutil.copy(self.wait(), private)
        return private

    def close(self) -> None:
        """Stops a compile still running (the build failed) and removes its temporary file."""
        if self.job is not None:
            self.job.kill()
            self.job = None
        if self.tmp is not None and os.path.exists(self.tmp):
            os.remove(self.tmp)
        self.tmp = None


_DL_CODES = {"int": 0, "uint": 1, "float": 2, "bfloat": 4}


def _dl_dtype(dtype: str) -> str:
    if dtype == "bool":
        return "{6, 8, 1}"  # kDLBool
    for prefix in ("uint", "int", "bfloat", "float"):
        if dtype.startswith(prefix) and dtype[len(prefix) :].isdigit():
            return f"{{{_DL_CODES[prefix]}, {dtype[len(prefix):]}, 1}}"
    raise ValueError(f"no DLPack dtype for {dtype}")


def _c_string(text: str) -> str:
    """A C string literal of `text`'s UTF-8 bytes: printable ASCII as is, every other byte (and
    `"`, `\\`, `?` — no trigraphs) as a three-digit octal escape, which never runs into the next
    character the way a hex escape does. (A JSON literal is not C: `\\ud83d` is no valid C escape.)"""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        out.append(char if 0x20 <= byte < 0x7F and char not in '"\\?' else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _forwarders(calls: dict, profiled: list | None = None) -> list[str]:
    """C functions named (by asm label) after each kernel-call symbol of the callers' object, jumping
    to the kernel's FFI symbol; see symbols.py for why a kernel is called under several names.
    `profiled` (a profiling build): the kernels in timing-table order; each forwarder then times its call."""
    lines = []
    for kernel in sorted(set(calls.values())):
        lines.append(f"extern int __tvm_ffi_{kernel}(void*, const void*, int32_t, void*);")
    rows = {name: i for i, name in enumerate(profiled)} if profiled is not None else None
    if rows is not None:
        lines += _profile_table(len(rows))
    for i, (symbol, kernel) in enumerate(calls.items()):
        name = f"transpile_tir_call_{i}"
        call = f"__tvm_ffi_{kernel}(s, a, n, r)"
        body = f"return {call};" if rows is None else f"return transpile_timed_call({rows[kernel]}, {call}, t0);"
        prologue = "" if rows is None else "int64_t t0 = transpile_now_ns(); "
        lines += [
            f'__attribute__((visibility("hidden"))) int {name}(void*, const void*, int32_t, void*) __asm__({_c_string(symbol)});',
            f"int {name}(void* s, const void* a, int32_t n, void* r) {{ {prologue}{body} }}",
        ]
    return lines


def _profile_table(count: int) -> list[str]:
    """A profiling build's counters (calls, nanoseconds per kernel) and the C functions reading and clearing them."""
    size = max(count, 1)
    return [
        "/* Profiling build: calls and CLOCK_MONOTONIC nanoseconds per kernel (see transpile/profiling.py). */",
        "#include <time.h>",
        f"static int64_t transpile_profile_calls[{size}], transpile_profile_ns[{size}];",
        "static inline int64_t transpile_now_ns(void) {",
        "  struct timespec t;",
        "  clock_gettime(CLOCK_MONOTONIC, &t);",
        "  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;",
        "}",
        "static inline int transpile_timed_call(int row, int rc, int64_t start) {",
        "  __atomic_fetch_add(&transpile_profile_ns[row], transpile_now_ns() - start, __ATOMIC_RELAXED);",
        "  __atomic_fetch_add(&transpile_profile_calls[row], 1, __ATOMIC_RELAXED);",
        "  return rc;",
        "}",
        '__attribute__((visibility("default"))) int64_t transpile_profile_read(int64_t* calls, int64_t* ns, int64_t capacity) {',
        f"  for (int64_t i = 0; i < {count} && i < capacity; ++i) {{",
        "    calls[i] = __atomic_load_n(&transpile_profile_calls[i], __ATOMIC_RELAXED);",
        "    ns[i] = __atomic_load_n(&transpile_profile_ns[i], __ATOMIC_RELAXED);",
        "  }",
        f"  return {count};",
        "}",
        '__attribute__((visibility("default"))) void transpile_profile_reset(void) {',
        f"  for (int i = 0; i < {size}; ++i) {{",
        "    __atomic_store_n(&transpile_profile_calls[i], 0, __ATOMIC_RELAXED);",
        "    __atomic_store_n(&transpile_profile_ns[i], 0, __ATOMIC_RELAXED);",
        "  }",
        "}",
    ]


def program_c(
    lowered, relay_entry: str, single_output: bool, big_stack: bool, calls: dict, profiled: list | None = None
) -> str:
    """The plain-C description of the program: its tensors, the weights blob (WEIGHTS_SYMBOL, linked
    from weights.o) as the one constant, and forwarders for the kernel calls `calls` (symbol -> kernel),
    timed per kernel in a profiling build (`profiled`: kernel names in timing-table order)."""
    lines = ["/* Generated by transpile (tir backend); do not edit. */", '#include "tir_program.h"', ""]
    lines.append(f"extern int __tvm_ffi_{lowered.entry_symbol}(void*, const void*, int32_t, void*);")
    lines += _forwarders(calls, profiled)

    def table(kind: str, items) -> str:
        if not items:
            return "0"
        entries = []
        for i, (name, ty, data) in enumerate(items):
            dims = [int(d) for d in ty.shape]
            lines.append(f"static const int64_t {kind}_shape_{i}[] = {{{', '.join(map(str, dims)) or '0'}}};")
            entries.append(f"  {{{_c_string(name)}, {len(dims)}, {kind}_shape_{i}, {_dl_dtype(ty.dtype)}, {data}}},")
        lines.append(f"static const TirTensorDesc {kind}[] = {{")
        lines.extend(entries)
        lines.append("};")
        return kind

    from ...lir.types import TensorType

    consts = []
    if lowered.weights:
        lines.append(f'extern __attribute__((visibility("hidden"))) const unsigned char {WEIGHTS_SYMBOL}[];')
        consts.append(("weights", TensorType((lowered.weights_layout.size,), "uint8"), f"(void*){WEIGHTS_SYMBOL}"))
    inputs = table("inputs", [(n, t, "0") for n, t in zip(lowered.input_names, lowered.input_types)])
    constants = table("constants", consts)
    outputs = table("outputs", [(f"output{i}", t, "0") for i, t in enumerate(lowered.output_types)])
    lines += [
        "",
        "const TirProgram transpile_tir_program = {",
        f"  {_c_string(relay_entry)},",
        f"  {len(lowered.input_types)}, {inputs},",
        f"  {len(consts)}, {constants},",
        f"  {len(lowered.output_types)}, {outputs},",
        f"  {1 if single_output else 0},",
        f"  {1 if big_stack else 0},",
        f"  (TirPackedFn)__tvm_ffi_{lowered.entry_symbol},",
        "};",
        "",
    ]
    return "\n".join(lines)


def _compilation_units(lowered) -> list:
    """The IRModule split in two for tvm.compile: packed kernels alone, then everything else.

    Compiled in one LLVM module with the functions calling them, the big kernels ran about 2x
    slower (measured on a 64x784x256 dense, again in 2026-11: 350 vs 800 us); the units are
    linked into one library, where the callers' kernel calls are resolved by symbol (program_c)."""
    import tvm

    kernels, rest = {}, {}
    for gv, func in lowered.module.functions.items():
        # GlobalVar keys: direct calls refer to the very GlobalVar objects of the module.
        (kernels if gv.name_hint in lowered.packed_kernels else rest)[gv] = func
    return [tvm.IRModule(part) for part in (kernels, rest) if part]


# TVM tags every buffer access with a type-based alias (TBAA) node of its own buffer variable, so
# LLVM takes accesses through different buffer variables to never alias. That holds inside one
# PrimFunc, not once LLVM inlines the direct kernels into their caller: two kernels, or a kernel
# and its caller, then reach the same memory (an arena slot reused by the memory plan, allocations
# StorageRewrite merged, a caller's buffer a kernel reads) under different nodes, and LLVM moved
# loads across the stores they depend on (issue 12 item 2: an int result held the bits of a dead
# float tensor's 1.0). The callers' unit is compiled without TBAA: BasicAA and the kernels'
# `noalias` scopes, both sound after inlining, remain.
_NO_TBAA = "-enable-tbaa:bool=0"
# LLVM options are process-global: TVM sets them for the life of a target's LLVM scope and then
# restores them, so two overlapping compiles naming the option could restore it under each other.
_NO_TBAA_LOCK = threading.Lock()


# TVM's StorageRewrite is unsound for the functions' allocations: it merges allocations of
# different dtypes whose lifetimes do not overlap into the first one's entry, and then retypes an
# allocation whose elements the function only reads or writes as a narrower type (the int8 views
# of bool buffers, see lowering/script.py declare_bytes) to that type *keeping its element count*:
# a float64[129] storage that a bool[1025] was merged into became int8[129] on the stack, and the
# callee writing 72 float64 into it overran it (a segfault). The functions' memory is planned by
# transpile (passes/memory_plan) and the kernels in this unit (the direct ones) allocate nothing
# (lowering/kernels.py), so the pass has nothing sound left to do here.
_CALLERS_PASS_CONFIG = {"tirx.disable_storage_rewrite": True}


def _callers_target(target):
    """`target` with TBAA off (the unit holding the functions and the kernels they call directly)."""
    import tvm

    config = dict(target.export())
    options = [str(o) for o in config.get("cl-opt", ())]
    config["cl-opt"] = options + [_NO_TBAA]
    return tvm.target.Target({k: v for k, v in config.items() if k not in ("keys", "tag")})


def _compile_units(lowered, work: Path) -> tuple[list[str], dict]:
    """tvm.compile of each unit into an object in `work`; returns the objects and the kernel calls
    they make (symbol -> kernel, see symbols.py)."""
    global compile_count
    import tvm

    from ...kernels.target import host_target
    from .symbols import kernel_calls, undefined_symbols

    target = host_target()
    units = _compilation_units(lowered)
    objects, calls = [], {}
    # One after the other: TVM compiles no faster in parallel threads (measured on MobileNet v2's
    # units, 2 cores: wall time unchanged, CPU time under one core).
    with progress.stage("tvm.compile", total=len(units)) as stage:
        for index, unit in enumerate(units):
            stage.advance(0, detail=f"unit {index + 1}: {len(unit.functions)} PrimFuncs")
            compile_count += 1
            path = work / f"program{index}.o"
            packed_only = all(gv.name_hint in lowered.packed_kernels for gv in unit.functions)
            if packed_only:  # each kernel a function of its own, called through the packed API: no inlining
                tvm.compile(unit, target=target).mod.write_to_file(str(path))
            else:
                with _NO_TBAA_LOCK, tvm.transform.PassContext(config=_CALLERS_PASS_CONFIG):
                    tvm.compile(unit, target=_callers_target(target)).mod.write_to_file(str(path))
            objects.append(str(path))
            calls.update(kernel_calls(undefined_symbols(path), lowered.packed_kernels))
            stage.advance(1)
    return objects, calls


def weights_object(lowered, work: Path) -> list[str]:
    """[weights.o]: the constants blob, written into `work` and assembled there from its relative
    name (no path is quoted into any source); [] when the entry takes no constants."""
    from ..weights import BLOB_NAME, incbin_assembly, write_blob

    if not lowered.weights:
        return []
    write_blob(lowered.weights, lowered.weights_layout, work / BLOB_NAME)
    (work / "weights.s").write_text(incbin_assembly(WEIGHTS_SYMBOL, BLOB_NAME))
    args = [native.cxx(), "-c", "-x", "assembler", "weights.s", "-o", "weights.o"]
    native.run_compiler(args, "assembling the tir weights", cwd=work)
    (work / BLOB_NAME).unlink()  # the object holds the bytes now
    return [str(work / "weights.o")]


def _link(work: Path, library_name: str, objects: list[str], shim: ShimObject) -> None:
    """program.c, the compiled units, the weights and the shim into `work/library_name`."""
    shutil.copy(RUNTIME_DIR / "tir_program.h", work / "tir_program.h")
    # RUNPATH $ORIGIN/lib (no path into the build's environment); lib/ links to the wheels' runtime.
    runtime_libs.link_into(work)
    link = ["-Wl,-Bsymbolic", *LINK_CHECKS, *runtime_libs.link_flags()]
    args = [native.cxx(), "-shared", "-fPIC", "-O1", "-x", "c", str(work / "program.c"), "-x", "none"]
    objects = objects + [str(shim.place_in(work))]
    args += objects + [f"-I{work}"] + [f"-I{d}" for d in native.tvm_include_dirs()]
    args += ["-o", str(work / library_name)] + link + ["-ltvm_runtime", "-ltvm_ffi"]
    with progress.stage("link"):
        native.run_compiler(args, "linking the tir library")
    for leftover in [work / "weights.s", *map(Path, objects)]:
        leftover.unlink(missing_ok=True)  # all in the library now


def _build_in(work: Path, program, lowered, shim: ShimObject, signature: dict, key: str, profile: bool = False) -> dict:
    """Compiles and links the lowered program in the directory `work`; returns its info."""
    from ...lir.types import TensorType

    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in program.entry) or "entry"
    script_name, library_name = f"{stem}.tir.py", f"lib{stem}.so"
    (work / script_name).write_text(lowered.module.script(), encoding="utf-8")
    objects, calls = _compile_units(lowered, work)
    objects += weights_object(lowered, work)
    single = isinstance(program.entry_function.ret, TensorType)
    big_stack = bool(signature.get("big_stack") or lowered.stack_checked)
    timed = [k for k in program.kernels if k.name in set(calls.values())] if profile else None
    text = program_c(lowered, program.entry, single, big_stack, calls, [k.name for k in timed] if profile else None)
    (work / "program.c").write_text(text, encoding="utf-8")
    _link(work, library_name, objects, shim)
    extra = {}
    if profile:  # what the report joins with the library's timing table, row by row
        from ...profiling import describe_kernels

        extra["profile_kernels"] = describe_kernels(timed)
        # Kernels TVM compiled into their callers (private PrimFuncs called directly): no call site to time.
        extra["profile_untimed"] = sorted(k.name for k in program.kernels if k.name not in {t.name for t in timed})
    return {
        **extra,
        "library": library_name,
        "script": script_name,
        "entry": program.entry,
        "entry_symbol": lowered.entry_symbol,
        "inputs": lowered.input_names,
        "num_outputs": len(lowered.output_types),
        "schedules": lowered.kernel_schedules,
        "key": key,
        "weights_bytes": lowered.weights_layout.size if lowered.weights else 0,
        "signature": signature,
    }


def build_library(program, lir_text: str, signature: dict, options: dict, source_key: str | None = None) -> BuildResult:
    """The cached library of `program` (lowered, compiled and linked now on a miss).

    `source_key`: the framework's key taken from the Relay module before lowering; without it the
    key comes from the LIR text and the weights' bytes."""
    from ...kernels.threads import configure_threads
    from ..weights import weights_digest
    from .lowering import lower_program

    root = native.cache_root() / "tir"
    key = source_key or cache_key(lir_text, options, weights_digest(program.constants))
    final = root / key
    info_path = final / "info.json"
    if info_path.is_file() and cache.touch(final):  # touched: eviction spares it while we load it
        try:
            return BuildResult(final, json.loads(info_path.read_text()), cached=True)
        except (OSError, ValueError):
            pass  # a damaged entry: rebuild below
    root.mkdir(parents=True, exist_ok=True)
    shim = ShimObject(root)  # compiles in the background on first use
    work = None
    try:
        configure_threads()
        with progress.stage("lower to TIR"):
            lowered = lower_program(program, schedule=options.get("schedule", True), tune=options.get("tune", 0))
        work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
        info = _build_in(work, program, lowered, shim, signature, key, profile=bool(options.get("profile")))
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
        shim.close()
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
