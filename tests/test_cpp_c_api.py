"""The exported cpp library from plain C (MNIST, parallel kernels), its RUNPATH, and loading it without `import tvm`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tvm_ffi")
if shutil.which("g++") is None or shutil.which("gcc") is None:  # pragma: no cover - part of the dev environment
    pytest.skip("these tests need gcc and g++", allow_module_level=True)

import transpile
from transpile import relay

# The kernels' runtime pointer variables the library fills in itself (transpile_rt.h).
FILLED_POINTERS = {
    "__TVMBackendParallelLaunch",
    "__TVMBackendParallelBarrier",
    "__TVMBackendAllocWorkspace",
    "__TVMBackendFreeWorkspace",
    "__TVMFFIFunctionCall",
    "__TVMFFIErrorSetRaisedFromCStr",
    "__TVMFFIEnvModLookupFromImports",
    "__TVMFFIHandleInitOnce",
}

# Runs `<prefix>_run` on inputs read from argv[1] (raw bytes, one after the other), writes the outputs
# to argv[2], then prints how many threads the process has (TVM's pool adds workers) and which TVM
# runtime libraries it mapped. Sizes come from the test (macros), so this stays plain C99.
C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include "main.h"

static const int64_t in_shapes[][4] = {IN_SHAPES};
static const int in_ndims[] = {IN_NDIMS};
static const int64_t out_shapes[][4] = {OUT_SHAPES};
static const int out_ndims[] = {OUT_NDIMS};
#define N_IN ((int)(sizeof in_ndims / sizeof in_ndims[0]))
#define N_OUT ((int)(sizeof out_ndims / sizeof out_ndims[0]))

static size_t elements(const int64_t* shape, int ndim) {
  size_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= (size_t)shape[i];
  return n;
}

static DLTensor tensor(const int64_t* shape, int ndim) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = malloc(elements(shape, ndim) * sizeof(float));
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = (int64_t*)shape;
  return t;
}

int main(int argc, char** argv) {
  DLTensor in[N_IN], out[N_OUT];
  const DLTensor* inputs[N_IN];
  DLTensor* outputs[N_OUT];
  FILE* f = fopen(argv[1], "rb");
  if (f == NULL) return 2;
  for (int i = 0; i < N_IN; ++i) {
    in[i] = tensor(in_shapes[i], in_ndims[i]);
    if (fread(in[i].data, sizeof(float), elements(in_shapes[i], in_ndims[i]), f) != elements(in_shapes[i], in_ndims[i]))
      return 2;
    inputs[i] = &in[i];
  }
  fclose(f);
  for (int i = 0; i < N_OUT; ++i) {
    out[i] = tensor(out_shapes[i], out_ndims[i]);
    outputs[i] = &out[i];
  }
  if (transpile_main_num_inputs() != N_IN || transpile_main_num_outputs() != N_OUT) return 3;
  if (transpile_main_run(inputs, outputs) != 0) {
    fprintf(stderr, "error: %s\n", transpile_last_error());
    return 1;
  }
  f = fopen(argv[2], "wb");
  for (int i = 0; i < N_OUT; ++i) fwrite(out[i].data, sizeof(float), elements(out_shapes[i], out_ndims[i]), f);
  fclose(f);
  /* A wrong shape is reported, not crashed on. */
  int64_t wrong_shape[4] = {3, 3, 3, 3};
  DLTensor wrong = in[0];
  wrong.shape = wrong_shape;
  const DLTensor* wrong_inputs[N_IN];
  for (int i = 0; i < N_IN; ++i) wrong_inputs[i] = i == 0 ? &wrong : inputs[i];
  if (transpile_main_run(wrong_inputs, outputs) != -1) return 4;
  printf("error %s\n", transpile_last_error());
  int threads = 0;
  DIR* tasks = opendir("/proc/self/task");
  for (struct dirent* e; tasks != NULL && (e = readdir(tasks)) != NULL;) threads += e->d_name[0] != '.';
  if (tasks != NULL) closedir(tasks);
  printf("threads %d\n", threads);
  char line[4096];
  FILE* maps = fopen("/proc/self/maps", "r");
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL)
    if (strstr(line, "libtvm") != NULL || strstr(line, "libmain") != NULL) printf("map %s", strchr(line, '/'));
  if (maps != NULL) fclose(maps);
  return 0;
}
"""


def _mnist(corpus_dir: Path):
    """MNIST (corpus menangerie__1) with He-scaled random weights."""
    rng = np.random.default_rng(0)
    meta = json.loads((corpus_dir / "menangerie__1.meta.json").read_text())
    constants = []
    for entry in meta["tables"]["relay.Constant"]:
        shape = tuple(entry["shape"])
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        constants.append(relay.Constant((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(entry["dtype"])))
    text = (corpus_dir / "menangerie__1.relay").read_text()
    return relay.parse(text, source_name="menangerie__1", init_meta_table={"relay.Constant": constants})


def _two_layer():
    """Two parallel dense kernels and a softmax (workspace), two outputs."""
    x = relay.var("x", shape=(64, 512), dtype="float32")
    w1 = relay.var("w1", shape=(512, 512), dtype="float32")
    w2 = relay.var("w2", shape=(256, 512), dtype="float32")
    hidden = relay.nn.relu(relay.nn.dense(x, w1))
    probs = relay.nn.softmax(relay.nn.dense(hidden, w2))
    return relay.IRModule.from_expr(relay.Function([x, w1, w2], relay.Tuple([probs, hidden])))


def _two_layer_inputs():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 512)).astype("float32")
    w1 = (rng.standard_normal((512, 512)) / np.sqrt(512)).astype("float32")
    w2 = (rng.standard_normal((256, 512)) / np.sqrt(512)).astype("float32")
    hidden = np.maximum(x @ w1.T, 0)
    z = hidden @ w2.T
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return [x, w1, w2], [e / e.sum(axis=1, keepdims=True), hidden]


def _clean_env(**extra) -> dict:
    """The environment without anything that could find the wheels' libraries for the program."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    return {**env, **extra}


def _compile_and_run(app: Path, inputs, output_shapes, moved_to: Path) -> tuple[list[np.ndarray], str]:
    """Compiles C_PROGRAM (gcc, C99, only `-I<export>`) in `app`, beside the export `app/model`, moves
    the whole of `app` to `moved_to`, and runs it there with TVM_NUM_THREADS=2: (outputs, its stdout)."""

    def shapes(arrays_shapes) -> str:  # a C initializer: one {d0, d1, d2, d3} row per tensor
        return ", ".join("{" + ", ".join(map(str, list(s) + [0] * (4 - len(s)))) + "}" for s in arrays_shapes)

    def ndims(arrays_shapes) -> str:
        return ", ".join(str(len(s)) for s in arrays_shapes)

    in_shapes, in_ndims = shapes([a.shape for a in inputs]), ndims([a.shape for a in inputs])
    out_shapes, out_ndims = shapes(output_shapes), ndims(output_shapes)
    source = app / "use.c"
    source.write_text(C_PROGRAM)
    macros = [
        f"-DIN_SHAPES={in_shapes}",
        f"-DIN_NDIMS={in_ndims}",
        f"-DOUT_SHAPES={out_shapes}",
        f"-DOUT_NDIMS={out_ndims}",
    ]
    model = app / "model"
    compile_args = ["gcc", "-std=c99", "-Wall", "-Werror", str(source), "-o", str(app / "use"), *macros]
    compile_args += [f"-I{model}", f"-L{model}", "-lmain", "-Wl,-rpath,$ORIGIN/model"]
    subprocess.run(compile_args, check=True, capture_output=True, text=True, env=_clean_env())
    shutil.move(str(app), str(moved_to))  # nothing may depend on where it was built or exported
    (moved_to / "in.bin").write_bytes(b"".join(np.ascontiguousarray(a, "float32").tobytes() for a in inputs))
    run = subprocess.run(
        [str(moved_to / "use"), str(moved_to / "in.bin"), str(moved_to / "out.bin")],
        capture_output=True,
        text=True,
        env=_clean_env(TVM_NUM_THREADS="2"),
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    flat = np.fromfile(moved_to / "out.bin", dtype="float32")
    outputs, start = [], 0
    for shape in output_shapes:
        size = int(np.prod(shape))
        outputs.append(flat[start : start + size].reshape(shape))
        start += size
    assert start == flat.size
    return outputs, run.stdout


def _check_runtime_came_from(stdout: str, directory: Path) -> None:
    mapped = {line.split(" ", 1)[1].strip() for line in stdout.splitlines() if line.startswith("map ")}
    names = {Path(p).name for p in mapped}
    assert {"libmain.so", "libtvm_runtime.so", "libtvm_ffi.so"} <= names, mapped
    assert all(p.startswith(str(directory)) for p in mapped), mapped  # the export's own lib/, nothing else


@pytest.fixture(scope="module")
def mnist(corpus_dir):
    mod = _mnist(corpus_dir)
    return mod, transpile.build(mod, backend="cpp")


@pytest.fixture(scope="module")
def two_layer_cpp():
    return transpile.build(_two_layer(), backend="cpp")


def test_mnist_from_c_matches_python_and_the_interpreter(mnist, tmp_path):
    mod, art = mnist
    app = tmp_path / "app"
    app.mkdir()
    art.export(app / "model")
    image = np.random.default_rng(2).standard_normal((1, 1, 28, 28)).astype("float32")
    (from_c,), stdout = _compile_and_run(app, [image], [(1, 10)], moved_to=tmp_path / "moved")
    _check_runtime_came_from(stdout, tmp_path / "moved")
    assert "expected Tensor[(1, 1, 28, 28), float32]" in stdout
    from_python = transpile.load(tmp_path / "moved" / "model")(image)  # the same library, from Python
    np.testing.assert_allclose(from_c, from_python, rtol=1e-6, atol=1e-6)
    expected = relay.evaluate(mod, image)
    np.testing.assert_allclose(from_c, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_parallel_kernels_from_c(two_layer_cpp, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    two_layer_cpp.export(app / "model")
    inputs, expected = _two_layer_inputs()
    outputs, stdout = _compile_and_run(app, inputs, [e.shape for e in expected], moved_to=tmp_path / "moved")
    _check_runtime_came_from(stdout, tmp_path / "moved")
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    threads = int(re.search(r"threads (\d+)", stdout).group(1))
    assert threads >= 2  # TVM's pool ran the parallel kernels on a worker (TVM_NUM_THREADS=2)


def test_the_library_fills_every_kernel_runtime_pointer(two_layer_cpp):
    """The pointer variables in the library (the kernels' and transpile_rt.h's) are exactly the ones
    its constructor fills in; the module context pointer, which only a module loader could fill, is absent."""
    symbols = subprocess.run(["nm", str(two_layer_cpp.library_path)], check=True, capture_output=True, text=True)
    pointers = {
        line.split()[-1] for line in symbols.stdout.splitlines() if re.search(r" [VvBbDd] (__TVM|__tvm_ffi__)", line)
    }
    assert pointers == FILLED_POINTERS
    assert "__TVMBackendParallelLaunch" in pointers


def _runpaths(library: Path) -> list[str]:
    dynamic = subprocess.run(["readelf", "-d", str(library)], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", dynamic)


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_exported_library_has_no_runpath_into_the_build_environment(backend, two_layer_cpp, tmp_path):
    art = two_layer_cpp if backend == "cpp" else transpile.build(_two_layer(), backend="tir")
    out = art.export(tmp_path / "model")
    library = out / art.info["library"]
    for entry in _runpaths(library):
        for path in entry.split(":"):
            assert path.startswith("$ORIGIN"), entry
            assert sys.prefix not in path and "site-packages" not in path
    assert _runpaths(library) == ["$ORIGIN/lib:$ORIGIN"]
    for name in ("libtvm_runtime.so", "libtvm_ffi.so"):
        shipped = out / "lib" / name
        assert shipped.is_file() and not shipped.is_symlink()


def test_export_holds_every_header_the_c_user_needs(two_layer_cpp, tmp_path):
    out = two_layer_cpp.export(tmp_path / "model")
    assert (out / "dlpack" / "dlpack.h").is_file()
    readme = (out / "README.txt").read_text()
    assert "gcc -std=c99 your_program.c -IDIR -LDIR -lmain -Wl,-rpath,DIR" in readme
    # The header compiles with the export directory as the only include path.
    check = tmp_path / "check.c"
    check.write_text('#include "main.h"\nint main(void) { return transpile_main_num_inputs() == 3 ? 0 : 1; }\n')
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-fsyntax-only", f"-I{out}", str(check)], check=True)


LOAD_WITHOUT_TVM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import transpile
    from transpile.backends.cpp.artifact import CppArtifact

    results = {}
    for name, path in json.loads(sys.argv[1]).items():
        if name == "cached cpp":  # a build cache entry, as a cache hit finds it
            f = CppArtifact(path, json.loads(open(path + "/info.json").read())).load()
        else:
            f = transpile.load(path)
        args = list(np.load(sys.argv[2]).values())
        results[name] = [np.asarray(o).tolist() for o in f(*args)]
    loaded_tvm = "tvm" in sys.modules
    import tvm  # afterwards: the one TVM runtime already loaded is the one tvm uses
    runtimes = sorted({l.split()[-1] for l in open("/proc/self/maps") if l.rstrip().endswith("/libtvm_runtime.so")})
    print(json.dumps({"tvm": loaded_tvm, "runtimes": runtimes, "results": results}))
    """)


def test_loading_and_calling_does_not_import_tvm(two_layer_cpp, tmp_path):
    tir = transpile.build(_two_layer(), backend="tir")
    paths = {
        "cached cpp": str(two_layer_cpp.directory),
        "exported cpp": str(two_layer_cpp.export(tmp_path / "cpp")),
        "exported tir": str(tir.export(tmp_path / "tir")),
    }
    inputs, expected = _two_layer_inputs()
    np.savez(tmp_path / "inputs.npz", *inputs)
    run = subprocess.run(
        [sys.executable, "-c", LOAD_WITHOUT_TVM, json.dumps(paths), str(tmp_path / "inputs.npz")],
        capture_output=True,
        text=True,
        env=_clean_env(TVM_NUM_THREADS="2"),
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["tvm"] is False
    assert len(report["runtimes"]) == 1  # the copies in lib/ were not loaded beside the wheel's runtime
    for name, outputs in report["results"].items():
        for got, want in zip(outputs, expected):
            np.testing.assert_allclose(np.asarray(got, "float32"), want, rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_readme_c_example_classifies_like_python(mnist, tmp_path):
    """examples/c_api/mnist.c, built with the command line its header comment (and the README) gives."""
    mod, art = mnist
    model = art.export(tmp_path / "model")
    example = Path(__file__).resolve().parent.parent / "examples" / "c_api" / "mnist.c"
    program = tmp_path / "mnist"
    subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Werror", str(example), f"-I{model}", f"-L{model}", "-lmain"]
        + [f"-Wl,-rpath,{model}", "-o", str(program)],
        check=True,
        env=_clean_env(),
    )
    image = np.random.default_rng(5).standard_normal((1, 1, 28, 28)).astype("float32")
    image.tofile(tmp_path / "digit.f32")
    run = subprocess.run(
        [str(program), str(tmp_path / "digit.f32")], capture_output=True, text=True, env=_clean_env(), timeout=120
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    scores = np.array([float(line.split(":")[1]) for line in lines[:10]], dtype="float32")
    expected = art.load()(image).reshape(10)
    np.testing.assert_allclose(scores, expected, atol=1e-4 * max(1.0, float(np.abs(expected).max())))
    assert lines[10] == f"class {int(np.argmax(expected))}"
    bad = subprocess.run([str(program), str(tmp_path / "missing.f32")], capture_output=True, text=True, env=_clean_env())
    assert bad.returncode == 2 and "cannot read 784 float32 values" in bad.stderr
