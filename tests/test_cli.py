"""The `transpile` command line: check, run, argument handling and error reporting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from transpile.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_prints_typed_program(capsys):
    code, out, err = run_cli(capsys, "check", str(EXAMPLES / "quickstart.rly"))
    assert code == 0, err
    assert out.startswith('#[version = "0.0.5"]')
    assert "def @sum_squares(%n: int32 /* ty=int32 */, %acc: int32 /* ty=int32 */) -> int32 {" in out
    assert "%3 = add(%acc, %1) /* ty=int32 */;" in out
    assert "@sum_squares(%2, %3) /* ty=int32 */" in out


def test_check_output_reparses(capsys):
    from transpile import relay

    code, out, _ = run_cli(capsys, "check", "--no-types", str(EXAMPLES / "quickstart.rly"))
    assert code == 0
    original = relay.parse((EXAMPLES / "quickstart.rly").read_text())
    assert relay.structural_equal(relay.parse(out), original)


def test_run_quickstart_with_literals(capsys):
    code, out, err = run_cli(capsys, "run", str(EXAMPLES / "quickstart.rly"), "10", "[1.0, 2.0, 3.0, 4.0]")
    assert code == 0, err
    # sum of squares 1..10 = 385; mean([1,2,3,4] * 10) = 25
    assert out.strip() == "(385, 25.0)"


def test_run_with_prelude_and_entry(capsys):
    code, out, err = run_cli(capsys, "run", "--prelude", str(EXAMPLES / "lists.rly"), "5")
    assert code == 0, err
    assert out.strip() == str(sum(i * i for i in range(1, 6)))
    code, out, err = run_cli(capsys, "run", str(EXAMPLES / "quickstart.rly"), "--entry", "sum_squares", "3", "1")
    assert code == 0, err
    assert out.strip() == "15"


def test_run_closures_example(capsys):
    code, out, err = run_cli(capsys, "run", str(EXAMPLES / "closures.rly"), "7")
    assert code == 0, err
    assert out.strip() == "(7, 14, 21)"


def test_run_with_npy_arguments_and_output(tmp_path, capsys):
    rng = np.random.default_rng(1)
    arrays = {
        "x": rng.standard_normal((1, 4)).astype("float32"),
        "w1": rng.standard_normal((3, 4)).astype("float32"),
        "b1": rng.standard_normal(3).astype("float32"),
        "w2": rng.standard_normal((2, 3)).astype("float32"),
    }
    paths = []
    for name, value in arrays.items():
        np.save(tmp_path / f"{name}.npy", value)
        paths.append(str(tmp_path / f"{name}.npy"))
    out_path = tmp_path / "out.npy"
    code, _, err = run_cli(capsys, "run", str(EXAMPLES / "mlp.rly"), *paths, "-o", str(out_path))
    assert code == 0, err
    hidden = np.maximum(arrays["x"] @ arrays["w1"].T + arrays["b1"], 0)
    logits = hidden @ arrays["w2"].T
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(np.load(out_path), expected, rtol=1e-5)


def test_parse_error_is_located_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.rly"
    bad.write_text('#[version = "0.0.5"]\ndef @main(%x: int32) -> int32 {\n  add(%x, %y)\n}\n')
    code, out, err = run_cli(capsys, "check", str(bad))
    assert code == 1 and out == ""
    first = err.splitlines()[0]
    assert first.startswith(f"{bad}:3:11: ")
    assert "%y" in first
    assert "Traceback" not in err
    assert err.splitlines()[-1].strip() == "^^"


def test_type_error_is_located(tmp_path, capsys):
    bad = tmp_path / "ill.rly"
    bad.write_text('#[version = "0.0.5"]\ndef @main(%x: int32, %y: float32) {\n  add(%x, %y)\n}\n')
    code, _, err = run_cli(capsys, "check", str(bad))
    assert code == 1
    assert err.startswith(f"{bad}:3:")
    assert "int32" in err and "float32" in err


def test_bad_arguments_are_reported(capsys):
    code, _, err = run_cli(capsys, "run", str(EXAMPLES / "quickstart.rly"), "2.5", "[1.0, 2.0, 3.0, 4.0]")
    assert code == 1 and "not representable as int32" in err
    code, _, err = run_cli(capsys, "run", str(EXAMPLES / "quickstart.rly"), "not a literal")
    assert code == 1 and "neither a .npy file nor a Python literal" in err
    code, _, err = run_cli(capsys, "run", str(EXAMPLES / "quickstart.rly"), "3")
    assert code == 1 and "argument" in err
    code, _, err = run_cli(capsys, "run", str(EXAMPLES / "quickstart.rly"), "--entry", "nope")
    assert code == 1 and "no function @nope" in err


def test_missing_file(capsys):
    code, _, err = run_cli(capsys, "check", "/nonexistent/prog.rly")
    assert code == 1 and "cannot read /nonexistent/prog.rly" in err


def test_debug_shows_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.rly"
    bad.write_text("def @main( {")
    code, _, err = run_cli(capsys, "--debug", "check", str(bad))
    assert code == 1 and "Traceback" in err


def test_module_entry_point_runs():
    proc = subprocess.run(
        [sys.executable, "-m", "transpile", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and proc.stdout.startswith("transpile ")


def test_backends_lists_builtin_backends_with_capabilities(capsys):
    code, out, err = run_cli(capsys, "backends")
    assert code == 0, err
    assert "interpreter  (transpile " in out and "python  (transpile " in out
    assert "capabilities: closures, adts, refs" in out


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_run_on_each_builtin_backend(backend, capsys):
    code, out, err = run_cli(capsys, "run", "-b", backend, str(EXAMPLES / "closures.rly"), "7")
    assert code == 0, err
    assert out.strip() == "(7, 14, 21)"


def test_emit_python_and_lir(tmp_path, capsys):
    target = tmp_path / "closures.py"
    code, _, err = run_cli(capsys, "emit", str(EXAMPLES / "closures.rly"), "-b", "python", "-o", str(target))
    assert code == 0, err
    source = target.read_text()
    assert "def make_counter(step):" in source and "import numpy as np" in source
    compile(source, str(target), "exec")
    code, out, err = run_cli(capsys, "emit", "-b", "lir", str(EXAMPLES / "closures.rly"))
    assert code == 0, err
    assert "make_closure" in out and "fn @main(" in out


def test_build_exports_an_artifact_that_loads(tmp_path, capsys):
    import transpile

    code, out, err = run_cli(capsys, "build", "-b", "python", str(EXAMPLES / "quickstart.rly"), "-o", str(tmp_path / "qs"))
    assert code == 0, err
    assert "into" in out
    run = transpile.load(tmp_path / "qs")
    total, mean = run(np.int32(4), np.array([1, 2, 3, 4], "float32"))
    assert int(total) == 1 + 4 + 9 + 16 and float(mean) == 10.0


def test_unknown_backend_is_a_clean_error(capsys):
    code, _, err = run_cli(capsys, "run", "-b", "nope", str(EXAMPLES / "quickstart.rly"), "1", "[1.0, 2.0, 3.0, 4.0]")
    assert code == 1 and "nope" in err and "python" in err


# ----- weights: --params FILE (.npz or TVM's param-dict format) -------------------------------------------

TVM_TEXTS = Path(__file__).resolve().parent / "data" / "tvm_metadata"


def test_run_with_params_file_in_either_format(tmp_path, capsys):
    from transpile import relay

    v = np.array([1.0, 2.0, 3.0, 4.0], "float32")
    for name in ("v.npz", "v.params"):
        relay.save_params({"v": v}, tmp_path / name)
        params = str(tmp_path / name)
        code, out, err = run_cli(capsys, "run", str(EXAMPLES / "quickstart.rly"), "--params", params, "10")
        assert code == 0, err
        assert out.strip() == "(385, 25.0)"


def test_run_a_tvm_model_with_its_weights(tmp_path, capsys):
    from transpile import relay

    rng = np.random.default_rng(3)
    x, weight, bias = (rng.standard_normal(s).astype("float32") for s in ((3, 5), (4, 5), (5,)))
    relay.save_params({"weight": weight, "in_bias": bias}, tmp_path / "w.params")
    np.save(tmp_path / "x.npy", x)
    model = str(TVM_TEXTS / "tvm012_dense.relay")
    for backend in ("interpreter", "python"):
        out_file = tmp_path / f"{backend}.npy"
        weights, inputs = str(tmp_path / "w.params"), str(tmp_path / "x.npy")
        code, _, err = run_cli(capsys, "run", "-b", backend, model, "--params", weights, inputs, "-o", str(out_file))
        assert code == 0, err
        multiply = relay.parse((TVM_TEXTS / "tvm012_dense.relay").read_text())["main"].body.args[0].args[0].args[0]
        expected = (np.maximum(x * multiply.args[1].data, 0) + bias) @ weight.T
        np.testing.assert_allclose(np.load(out_file), expected, rtol=1e-5)


def test_check_emit_and_build_take_params(tmp_path, capsys):
    import transpile
    from transpile import relay

    v = np.array([1.0, 2.0, 3.0, 5.0], "float32")
    relay.save_params({"v": v}, tmp_path / "v.npz")
    quickstart = str(EXAMPLES / "quickstart.rly")
    code, out, err = run_cli(capsys, "check", "--no-types", quickstart, "--params", str(tmp_path / "v.npz"))
    assert code == 0, err
    assert "def @main(%n: int32) -> (int32, float32) {" in out and "\n#[metadata]\n" in out
    reparsed = relay.parse(out)["main"].body.fields[1].args[0].args[0]  # mean(multiply(v, cast(n)))
    np.testing.assert_array_equal(reparsed.data, v)  # the weights are in the printed section
    code, out, err = run_cli(capsys, "emit", "-b", "python", quickstart, "--params", str(tmp_path / "v.npz"))
    assert code == 0, err
    assert "def main(n):" in out
    art = str(tmp_path / "art")
    code, _, err = run_cli(capsys, "build", "-b", "python", quickstart, "--params", str(tmp_path / "v.npz"), "-o", art)
    assert code == 0, err
    total, mean = transpile.load(tmp_path / "art")(np.int32(2))
    assert int(total) == 5 and float(mean) == 5.5


def test_missing_metadata_says_how_to_supply_the_constants(tmp_path, capsys):
    from transpile import relay

    model = tmp_path / "no_meta.relay"
    model.write_text(
        '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n'
        "  %0 = add(%x, meta[relay.Constant][0]);\n  multiply(%0, meta[relay.Constant][1])\n}\n"
    )
    code, _, err = run_cli(capsys, "run", str(model), "[1.0, 2.0]")
    assert code == 1
    uses = "the program uses 2 relay.Constant values (meta[relay.Constant][0] to meta[relay.Constant][1])"
    assert f"{model}:3:16: {uses}" in err
    assert "--params FILE" in err and "entries are named meta[relay.Constant][0], meta[relay.Constant][1], ..." in err
    constants = {"meta[relay.Constant][0]": np.ones(2, "float32"), "meta[relay.Constant][1]": np.float32([2, 3])}
    relay.save_params(constants, tmp_path / "consts.npz")
    code, out, err = run_cli(capsys, "run", str(model), "--params", str(tmp_path / "consts.npz"), "[1.0, 2.0]")
    assert code == 0, err
    assert out.strip() == "[4., 9.]"


def test_params_errors_and_warnings(tmp_path, capsys):
    from transpile import relay

    quickstart = str(EXAMPLES / "quickstart.rly")
    relay.save_params({"v": np.ones(3, "float32")}, tmp_path / "short.npz")
    code, _, err = run_cli(capsys, "run", quickstart, "--params", str(tmp_path / "short.npz"), "1")
    assert code == 1
    assert err.strip() == (
        "error: the value for parameter %v of @main has shape (3,), but the parameter is declared Tensor[(4), float32]"
    )
    relay.save_params({"v": np.ones(4, "float32"), "vv": np.ones(1)}, tmp_path / "extra.npz")
    code, out, err = run_cli(capsys, "run", quickstart, "--params", str(tmp_path / "extra.npz"), "2")
    assert code == 0 and out.strip() == "(5, 2.0)"
    assert "warning: params 'vv' match no parameter of @main and are ignored (its parameters: %n, %v)" in err
    (tmp_path / "bad.params").write_bytes(b"\xb7\x9c\x04\x05O\x8d\xe5\xf7" + b"\0" * 4)
    code, _, err = run_cli(capsys, "check", quickstart, "--params", str(tmp_path / "bad.params"))
    assert code == 1 and "bad.params: truncated at byte 8 while reading the reserved field" in err
