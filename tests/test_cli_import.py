"""The command line on model files: `transpile import`, and check/run/build/emit straight from .onnx (and --shape)."""

from __future__ import annotations

import numpy as np
import pytest

from transpile.cli import main

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def model_path(tmp_path):
    """y = relu(x + w) * 2 with an unknown batch dimension and names that are not Relay identifiers."""
    nodes = [
        helper.make_node("Add", ["input.1", "layer.0.bias"], ["sum"], name="add/1"),
        helper.make_node("Relu", ["sum"], ["act"], name="relu"),
        helper.make_node("Mul", ["act", "two"], ["out.0"], name="scale"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("out.0", TensorProto.FLOAT, None)],
        initializer=[
            helper.make_tensor("layer.0.bias", TensorProto.FLOAT, [3], [1.0, -2.0, 0.5]),
            helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
        ],
    )
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def expected(x):
    return np.maximum(x + np.array([1.0, -2.0, 0.5], "float32"), 0) * 2


def test_import_writes_text_and_weights_that_run_back(capsys, tmp_path, model_path):
    out_path = tmp_path / "out" / "model.relay"
    out_path.parent.mkdir()
    code, out, err = run_cli(capsys, "import", model_path, "-o", out_path, "-q")
    assert code == 0, err
    text = out_path.read_text()
    assert "def @main(%input_1: Tensor[(?, 3), float32], %layer_0_bias: Tensor[(3), float32]" in text
    weights = np.load(out_path.with_suffix(".npz"))
    assert sorted(weights.files) == ["layer_0_bias", "two"]
    assert "1 weight" not in out and "2 weights" in out
    x = np.array([[0.0, 3.0, -1.0], [1.0, 1.0, 1.0]], "float32")
    np.save(tmp_path / "x.npy", x)
    code, out, err = run_cli(capsys, "run", out_path, "--params", out_path.with_suffix(".npz"), tmp_path / "x.npy",
                             "-o", tmp_path / "y.npy")
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected(x))


@pytest.mark.parametrize("backend", ["interpreter", "cpp"])
def test_run_straight_from_onnx(capsys, tmp_path, model_path, backend):
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2
    np.save(tmp_path / "x.npy", x)
    code, out, err = run_cli(capsys, "run", "-b", backend, model_path, tmp_path / "x.npy", "-o", tmp_path / "y.npy", "-q")
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected(x))


def test_shape_option_fixes_unknown_dimensions(capsys, model_path):
    code, out, err = run_cli(capsys, "check", model_path, "--shape", "input.1=4,3")
    assert code == 0, err
    assert "Tensor[(4, 3), float32]" in out and "?" not in out.split("#[metadata]")[0]


def test_build_from_onnx_exports_a_loadable_library(capsys, tmp_path, model_path):
    import transpile

    code, out, err = run_cli(capsys, "build", model_path, "-b", "cpp", "-o", tmp_path / "lib", "--shape", "input.1=2,3", "-q")
    assert code == 0, err
    x = np.ones((2, 3), "float32")
    np.testing.assert_allclose(transpile.load(tmp_path / "lib")(x), expected(x))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["check", "{model}", "--shape", "x=1,3"], "a shape is given for x, but the graph has no such input"),
        (["check", "{model}", "--shape", "input.1=2,a"], "dimensions must be integers or ?"),
        (["check", "{model}", "--shape", "input.1"], "expected NAME=D1,D2"),
        (["check", "{model}", "--params", "{model}"], "--params applies to Relay text files"),
        (["check", "{garbage}"], "not a readable ONNX model"),
        (["check", "{missing}"], "no such model file"),
        (["check", "{relay}", "--shape", "x=1"], "--shape applies to model files"),
    ],
)
def test_bad_model_command_lines_are_clear_errors(capsys, tmp_path, model_path, argv, message):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07this is not a protobuf\xff\xff")
    relay_file = tmp_path / "p.rly"
    relay_file.write_text('#[version = "0.0.5"]\ndef @main(%x: float32) { %x }\n')
    names = {"model": model_path, "garbage": garbage, "missing": tmp_path / "nope.onnx", "relay": relay_file}
    code, out, err = run_cli(capsys, *[a.format(**names) for a in argv])
    assert code == 1, (out, err)
    assert message in err
    assert "Traceback" not in err and "internal error" not in err


def test_unsupported_operators_are_all_listed(capsys, tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("StringNormalizer", ["a"], ["b"], name="strings"),
        helper.make_node("NoSuchOp", ["b"], ["c"], name="mystery"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])],
    )
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph), path)
    code, out, err = run_cli(capsys, "check", path)
    assert code == 1
    assert "StringNormalizer (node 'strings')" in err and "NoSuchOp (node 'mystery')" in err


def test_torch_export_program_file_runs_and_imports(capsys, tmp_path):
    torch = pytest.importorskip("torch")

    class Small(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.relu(self.linear(x)) * 2

    module = Small().eval()
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(0))
    path = tmp_path / "small.pt2"
    torch.export.save(torch.export.export(module, (x,)), path)
    np.save(tmp_path / "x.npy", x.numpy())
    with torch.no_grad():
        expected = module(x).numpy()
    code, out, err = run_cli(capsys, "run", "-b", "cpp", path, tmp_path / "x.npy", "-o", tmp_path / "y.npy", "-q")
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-5, atol=1e-6)
    code, out, err = run_cli(capsys, "import", path, "-o", tmp_path / "small.relay", "-q")
    assert code == 0, err
    weights = np.load(tmp_path / "small.npz")
    assert sorted(weights.files) == ["linear_bias", "linear_weight"]
    code, out, err = run_cli(capsys, "run", tmp_path / "small.relay", "--params", tmp_path / "small.npz",
                             tmp_path / "x.npy", "-o", tmp_path / "z.npy")
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "z.npy"), expected, rtol=1e-5, atol=1e-6)
    code, out, err = run_cli(capsys, "check", path, "--shape", "x=1,4")
    assert code == 1 and "--shape applies to ONNX models" in err


def test_run_saves_its_output_file_even_when_the_reader_closes_the_pipe(tmp_path, model_path, monkeypatch):
    import os
    import sys

    class ClosedPipe:
        def __init__(self):
            self.fd = os.open(os.devnull, os.O_WRONLY)

        def write(self, text):
            raise BrokenPipeError

        def flush(self):
            pass

        def fileno(self):
            return self.fd

    pipe = ClosedPipe()
    monkeypatch.setattr(sys, "stdout", pipe)
    x = np.ones((2, 3), "float32")
    np.save(tmp_path / "x.npy", x)
    code = main(["run", str(model_path), str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy"), "-q"])
    os.close(pipe.fd)
    assert code == 141
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected(x))
