"""The cpp backend's standalone source bundle: built with make and g++ alone (no TVM), run, checked against numpy."""

from __future__ import annotations

import ctypes
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.backends.cpp.standalone import MANIFEST, build_bundle
from transpile.cli import main as cli_main
from transpile.errors import TranspileError, UnsupportedFeatureError

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("g++", "make", "ar", "objcopy")), reason="needs g++, make, ar and objcopy"
)

ADT_PROGRAM = """#[version = "0.0.5"]
def @build(%n: int32, %x: Tensor[(3), float32]) -> List[Tensor[(3), float32]] {
  if (less(%n, 1)) {
    Nil
  } else {
    Cons(multiply(%x, cast(%n, dtype="float32")), @build(subtract(%n, 1), %x))
  }
}

def @main(%x: Tensor[(3), float32], %n: int32, %s: Tensor[(3), float32]) -> (Tensor[(3), float32], int32) {
  let %xs = @build(%n, %x);
  let %ys = @map(fn (%v: Tensor[(3), float32]) -> Tensor[(3), float32] { add(%v, %s) }, %xs);
  let %count = ref(0);
  let %step = fn (%acc: Tensor[(3), float32], %v: Tensor[(3), float32]) -> Tensor[(3), float32] {
    let %_ = ref_write(%count, add(ref_read(%count), 1));
    add(%acc, %v)
  };
  let %total = @foldl(%step, zeros_like(%x), %ys);
  (%total, ref_read(%count))
}
"""

SMALL_PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) -> Tensor[(4), float32] {
  add(multiply(%x, %y), %y)
}
"""


def _make(directory: Path) -> str:
    """`make` in an environment without Python, TVM or any of their paths; returns its command lines."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(directory), "LANG": "C"}
    proc = subprocess.run(["make", "-j2"], cwd=directory, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _assert_no_tvm(directory: Path, log: str, name: str) -> None:
    for line in log.splitlines():
        assert "tvm/" not in line and "-ltvm" not in line and "site-packages" not in line, line
    for path in directory.rglob("*"):
        if path.suffix in (".c", ".cc", ".h"):
            assert not re.search(r'^\s*#\s*include\s*[<"]tvm/', path.read_text(), re.MULTILINE), path
    library = directory / f"lib{name}.so"
    needed = subprocess.run(["ldd", str(library)], capture_output=True, text=True).stdout
    assert "libtvm" not in needed and "python" not in needed.lower(), needed
    c_api = sorted(
        [
            "transpile_last_error",
            f"transpile_{name}_run",
            f"transpile_{name}_num_inputs",
            f"transpile_{name}_num_outputs",
        ]
    )
    # Only the C API is exported: from the shared library, and (as strong globals) from the archive.
    for command in (
        ["nm", "-D", "--defined-only", str(library)],
        ["nm", "-g", "--defined-only", str(directory / f"lib{name}.a")],
    ):
        listing = subprocess.run(command, capture_output=True, text=True).stdout
        assert sorted(line.split()[-1] for line in listing.splitlines() if " T " in line) == c_api


# ---------------------------------------------------------------- calling the C API with ctypes


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_CODES = {"f": 2, "i": 0, "u": 1, "b": 6}


def _dltensor(array: np.ndarray, keep: list) -> DLTensor:
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    keep += [array, shape]
    dtype = DLDataType(_CODES[array.dtype.kind], array.dtype.itemsize * 8, 1)
    return DLTensor(array.ctypes.data, DLDevice(1, 0), array.ndim, dtype, shape, None, 0)


class CApi:
    def __init__(self, library: Path, name: str):
        self.lib = ctypes.CDLL(str(library))
        self.run_fn = getattr(self.lib, f"transpile_{name}_run")
        self.run_fn.restype = ctypes.c_int
        self.lib.transpile_last_error.restype = ctypes.c_char_p

    def run(self, inputs: list, outputs: list) -> int:
        keep: list = []
        ins = [_dltensor(np.require(a, requirements="C"), keep) for a in inputs]
        outs = [_dltensor(a, keep) for a in outputs]
        in_ptrs = (ctypes.POINTER(DLTensor) * len(ins))(*[ctypes.pointer(t) for t in ins])
        out_ptrs = (ctypes.POINTER(DLTensor) * len(outs))(*[ctypes.pointer(t) for t in outs])
        return self.run_fn(in_ptrs, out_ptrs)

    def last_error(self) -> str:
        return self.lib.transpile_last_error().decode()


# ---------------------------------------------------------------- the CNN


@pytest.fixture(scope="module")
def cnn_bundle(tmp_path_factory):
    from bench.workloads import parse_workload
    from bench.workloads.models import cnn_weights

    weights = cnn_weights()
    directory = tmp_path_factory.mktemp("standalone") / "cnn"
    bundle = build_bundle(parse_workload("cnn.rly", meta=weights), directory)
    log = _make(directory)
    return bundle, weights, log


def _cnn_reference(x, weights):
    """Direct loops-and-einsum numpy: conv 3x3 pad 1 + bias, relu, 2x2 max pool, twice; then dense."""
    w1, b1, w2, b2, wd, bd = (w.astype(np.float64) for w in weights)

    def conv(v, w, b):
        padded = np.pad(v, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((v.shape[0], w.shape[0], v.shape[2], v.shape[3]))
        for i in range(3):
            for j in range(3):
                patch = padded[:, :, i : i + v.shape[2], j : j + v.shape[3]]
                out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
        return out + b[None, :, None, None]

    def pool(v):
        n, c, h, w = v.shape
        return v.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))

    y = pool(np.maximum(conv(x.astype(np.float64), w1, b1), 0))
    y = pool(np.maximum(conv(y, w2, b2), 0))
    return y.reshape(1, -1) @ wd.T + bd


def test_cnn_bundle_builds_without_tvm(cnn_bundle):
    bundle, _, log = cnn_bundle
    _assert_no_tvm(bundle.directory, log, bundle.name)
    names = {p.relative_to(bundle.directory).as_posix() for p in bundle.directory.rglob("*") if p.is_file()}
    assert set(bundle.manifest["files"]) <= names
    assert {"Makefile", "README.txt", "program.cc", "kernels.c", "main.h", "libmain.so", "libmain.a"} <= names


def test_cnn_bundle_weights_are_data(cnn_bundle):
    """The weights travel as weights.bin (linked by the assembler), never as C++ literals."""
    bundle, weights, _ = cnn_bundle
    blob = (bundle.directory / "weights.bin").read_bytes()
    assert "weights.s" in bundle.manifest["files"] and "weights.bin" in bundle.manifest["files"]
    source = (bundle.directory / "program.cc").read_text()
    assert "transpile_weights + 0" in source and "0x" not in source
    for w in weights:  # each weight's bytes sit in the blob at a 64-byte aligned offset
        raw = np.ascontiguousarray(w).tobytes()
        offset = blob.find(raw)
        assert offset >= 0 and offset % 64 == 0
    symbols = subprocess.run(["nm", str(bundle.directory / "weights.o")], capture_output=True, text=True).stdout
    assert "transpile_weights" in symbols
    manifest = json.loads((bundle.directory / MANIFEST).read_text())
    assert manifest["inputs"] == [{"name": "x", "shape": [1, 1, 28, 28], "dtype": "float32"}]
    assert manifest["outputs"] == [{"name": "output0", "shape": [1, 10], "dtype": "float32"}]


def _functions(c_text: str) -> dict:
    """kernels.c's function bodies by kernel name."""
    parts = re.split(r"^TVM_DLL int32_t __tvm_ffi_(\w+)\(.*\) \{$", c_text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def _innermost_loops(body: str) -> list:
    """The bodies of the `for` loops that contain no other loop."""
    loops = []
    for match in re.finditer(r"for \([^)]*\) \{", body):
        depth, end = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(body[end], 0)
            end += 1
        inner = body[match.end() : end - 1]
        if "for (" not in inner:
            loops.append(inner)
    return loops


def test_cnn_conv_kernels_are_guard_free_with_local_accumulators(cnn_bundle):
    # A tile that does not divide the output width leaves an `if` in the innermost loop, and a heap
    # accumulator may alias the inputs: either stops gcc from vectorizing the conv (3x slower).
    bundle, _, _ = cnn_bundle
    convs = {n: b for n, b in _functions((bundle.directory / "kernels.c").read_text()).items() if "conv2d" in n}
    assert len(convs) == 2
    for name, body in convs.items():
        updates = [loop for loop in _innermost_loops(body) if "conv2d_nchw_local[" in loop and "pad_temp[" in loop]
        assert updates, name
        assert not any("if (" in loop for loop in updates), name
        assert re.search(r"^\s*float conv2d_nchw_local\[\d+\]", body, re.MULTILINE), name


def test_stack_workspaces_moves_only_small_buffers():
    from transpile.backends.cpp.standalone.bundle import stack_workspaces

    def alloc(name, size):
        return (
            f"  float* {name} = ((float*)((float*)TVMBackendAllocWorkspace(1, dev_id, (uint64_t){size}ULL, 2, 32)));\n"
            f"  if ({name} == NULL) {{\n    return -1;\n  }}\n"
        )

    def free(name):
        return f"  if (TVMBackendFreeWorkspace(1, dev_id, {name}) != 0) {{\n    return -1;\n  }}\n"

    text = alloc("big", 4096) + alloc("acc", 128) + "  acc[0] = big[0];\n" + free("acc") + free("big")
    out = stack_workspaces(text)
    assert out == (
        alloc("big", 4096) + "  float acc[32] __attribute__((aligned(64)));\n" + "  acc[0] = big[0];\n" + free("big")
    )


def test_cnn_demo_matches_numpy(cnn_bundle, tmp_path):
    bundle, weights, _ = cnn_bundle
    x = np.random.default_rng(7).standard_normal((1, 1, 28, 28)).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    proc = subprocess.run(
        [str(bundle.directory / "main_demo"), "-o", str(tmp_path / "out"), str(tmp_path / "x.bin")],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "output 0 (output0, float32[1, 10])" in proc.stdout
    result = np.fromfile(tmp_path / "out0.bin", dtype=np.float32).reshape(1, 10)
    np.testing.assert_allclose(result, _cnn_reference(x, weights), rtol=1e-4, atol=1e-5)


def test_cnn_c_api_through_ctypes(cnn_bundle):
    bundle, weights, _ = cnn_bundle
    api = CApi(bundle.directory / "libmain.so", "main")
    x = np.random.default_rng(8).standard_normal((1, 1, 28, 28)).astype(np.float32)
    out = np.zeros((1, 10), np.float32)
    assert api.run([x], [out]) == 0, api.last_error()
    np.testing.assert_allclose(out, _cnn_reference(x, weights), rtol=1e-4, atol=1e-5)
    # A wrong input is an error code and a message, not a crash.
    assert api.run([np.zeros((1, 1, 27, 28), np.float32)], [out]) == -1
    assert api.last_error() == (
        "ValueError: argument 1 (%x) of @main: expected Tensor[(1, 1, 28, 28), float32] "
        "but got Tensor[(1, 1, 27, 28), float32]"
    )
    assert api.run([x.astype(np.float64)], [out]) == -1 and "float64" in api.last_error()


def test_cnn_concurrent_calls(cnn_bundle):
    """The README promises calls from several threads at once (ctypes releases the GIL during a call)."""
    from concurrent.futures import ThreadPoolExecutor

    bundle, weights, _ = cnn_bundle
    api = CApi(bundle.directory / "libmain.so", "main")
    images = [np.random.default_rng(20 + i).standard_normal((1, 1, 28, 28)).astype(np.float32) for i in range(4)]

    def run(x):
        results = []
        for _ in range(5):
            out = np.zeros((1, 10), np.float32)
            assert api.run([x], [out]) == 0
            results.append(out)
        return results

    with ThreadPoolExecutor(4) as pool:
        for x, results in zip(images, pool.map(run, images)):
            for out in results:
                np.testing.assert_allclose(out, _cnn_reference(x, weights), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- ADTs, closures, refs, recursion


@pytest.fixture(scope="module")
def adt_bundle(tmp_path_factory):
    root = tmp_path_factory.mktemp("standalone_adt")
    source = root / "adt.rly"
    source.write_text(ADT_PROGRAM)
    directory = root / "bundle"
    assert cli_main(["build", "-b", "cpp", "--standalone", "--prelude", "-o", str(directory), str(source)]) == 0
    _make(directory)
    return directory


def _adt_expected(x, n, s):
    # sum over i = 1..n of (x * i + s), and the number of fold steps
    return x * (n * (n + 1) / 2) + n * s, n


def test_adt_closure_program_runs(adt_bundle):
    api = CApi(adt_bundle / "libmain.so", "main")
    x = np.array([0.0, -0.5, 0.25], np.float32)
    s = np.array([0.5, -0.25, 0.0], np.float32)
    for n in (0, 3, 100_000):  # 100 000: non-tail recursion that needs the big stack
        total, count = np.zeros(3, np.float32), np.zeros((), np.int32)
        assert api.run([x, np.array(n, np.int32), s], [total, count]) == 0, api.last_error()
        expected_total, expected_count = _adt_expected(x.astype(np.float64), n, s.astype(np.float64))
        assert int(count) == expected_count
        np.testing.assert_allclose(total, expected_total, rtol=1e-4)


def test_recursion_guard_gives_an_error(adt_bundle, tmp_path):
    np.array([1, 2, 3], np.float32).tofile(tmp_path / "x.bin")
    np.array(100_000, np.int32).tofile(tmp_path / "n.bin")
    proc = subprocess.run(
        [str(adt_bundle / "main_demo"), *(str(tmp_path / f) for f in ("x.bin", "n.bin", "x.bin"))],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TRANSPILE_STACK_MIB": "1"},
    )
    assert proc.returncode == 1
    assert "RecursionError: recursion deeper than the stack allows" in proc.stderr


def test_standalone_source_is_the_cpp_backends_source():
    """One code generator: the flavours differ only in the runtime header and the exported entry points."""
    from transpile.backends.cpp.codegen import generate
    from transpile.pipeline import lower_to_lir

    mod = relay.parse(ADT_PROGRAM, init_module=_prelude())
    program = lower_to_lir(relay.transform.InferType()(mod), entry="main")
    marker = "// ---------------------------------------------------------------- boundary marshalling"
    tvm_flavour = generate(program).source.split(marker)[0]
    standalone = generate(program, standalone=True).source.split(
        "// ---------------------------------------------------------------- exported entry points"
    )[0]
    assert "#include <transpile_rt.h>" in tvm_flavour and "#include <transpile_rt_standalone.h>" in standalone
    assert standalone.replace("transpile_rt_standalone.h", "transpile_rt.h").rstrip() == tvm_flavour.rstrip()


# ---------------------------------------------------------------- where bundles may be written


def _small_module():
    return relay.parse(SMALL_PROGRAM)


def test_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(TranspileError, match="refusing to write a bundle"):
        build_bundle(_small_module(), tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_rewriting_a_bundle_keeps_other_files(tmp_path):
    directory = tmp_path / "bundle"
    build_bundle(_small_module(), directory)
    (directory / "libmain.so").write_text("an old build product")
    (directory / "notes.txt").write_text("mine")
    bundle = build_bundle(_small_module(), directory)
    assert (directory / "notes.txt").read_text() == "mine"
    assert not (directory / "libmain.so").exists()
    assert all((directory / f).is_file() for f in bundle.manifest["files"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]  # no temporary directory left behind


def test_entry_must_pass_tensors(tmp_path):
    mod = relay.parse(
        """#[version = "0.0.5"]
def @main(%xs: List[int32]) -> int32 { 0 }
""",
        init_module=_prelude(),
    )
    with pytest.raises(UnsupportedFeatureError, match="C API passes tensors only"):
        build_bundle(mod, tmp_path / "bundle")
    assert not (tmp_path / "bundle").exists()


def _prelude():
    init = relay.IRModule()
    relay.Prelude(init)
    return init


def test_standalone_is_not_a_build_option_and_needs_cpp(tmp_path, capsys):
    with pytest.raises(TranspileError, match="build_bundle"):
        transpile.build(_small_module(), backend="cpp", standalone=True)
    source = tmp_path / "small.rly"
    source.write_text(SMALL_PROGRAM)
    assert cli_main(["build", "-b", "python", "--standalone", "-o", str(tmp_path / "out"), str(source)]) == 1
    assert "--standalone needs the cpp backend" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
