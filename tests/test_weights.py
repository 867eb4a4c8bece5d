"""Weights as data: the shared blob writer, and cpp libraries whose constants never pass through g++."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.backends.weights import ALIGNMENT, WeightsLayout, incbin_assembly, little_endian, write_blob
from transpile.lir.nodes import ConstDef
from transpile.lir.types import TensorType


def _const(name, value):
    value = np.asarray(value)
    return ConstDef(name, value, TensorType(tuple(value.shape), value.dtype.name))


def test_layout_aligns_every_constant_and_the_blob_holds_their_bytes(tmp_path):
    values = [
        np.arange(3, dtype="float32"),
        np.array([[1, -2], [3, 4]], dtype="int8"),
        np.zeros((0, 4), dtype="float64"),
        np.array([True, False, True]),
        np.arange(70, dtype="float16").reshape(7, 10),
    ]
    constants = [_const(f"c{i}", v) for i, v in enumerate(values)]
    layout = WeightsLayout.of(constants)
    write_blob(constants, layout, tmp_path / "w.bin")
    blob = (tmp_path / "w.bin").read_bytes()
    assert len(blob) == layout.size and layout.size % ALIGNMENT == 0
    for const, value in zip(constants, values):
        offset, nbytes = layout.offsets[const.name]
        assert offset % ALIGNMENT == 0 and nbytes == value.nbytes
        assert blob[offset : offset + nbytes] == value.tobytes()


def test_big_endian_constants_are_written_little_endian(tmp_path):
    value = np.arange(4, dtype=">i4")
    const = _const("c", value)
    layout = WeightsLayout.of([const])
    write_blob([const], layout, tmp_path / "w.bin")
    assert (tmp_path / "w.bin").read_bytes()[:16] == np.arange(4, dtype="<i4").tobytes()
    assert little_endian(value).dtype.byteorder in ("<", "=")


@pytest.mark.parametrize("symbol, file", [("a b", "w.bin"), ("w", 'x".bin'), ("w", "../w.bin"), ("w", "a/b")])
def test_incbin_refuses_unsafe_names(symbol, file):
    with pytest.raises(ValueError):
        incbin_assembly(symbol, file)


def _weighted_program(rows: int):
    w = relay.const(np.random.default_rng(rows).standard_normal((rows, 8)).astype("float32"))
    x = relay.var("x", shape=(1, 8), dtype="float32")
    return relay.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.nn.dense(x, w))))


def test_cpp_source_does_not_grow_with_the_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    small, big = (transpile.emit(_weighted_program(rows), backend="cpp") for rows in (4, 4000))
    assert abs(len(big) - len(small)) < 200  # only the printed shapes and offsets differ
    artifact = transpile.build(_weighted_program(4000), backend="cpp")
    library = artifact.library_path
    weights_bytes = 4000 * 8 * 4
    assert weights_bytes <= library.stat().st_size <= weights_bytes + 400_000
    x = np.random.default_rng(0).standard_normal((1, 8)).astype("float32")
    expected = relay.evaluate(_weighted_program(4000), x)
    np.testing.assert_allclose(artifact.load()(x), expected, rtol=1e-5, atol=1e-5)
    symbols = subprocess.run(["nm", str(library)], capture_output=True, text=True).stdout
    assert " r transpile_weights" in symbols or " R transpile_weights" in symbols  # read-only, not exported
    dynamic = subprocess.run(["nm", "-D", str(library)], capture_output=True, text=True).stdout
    assert "transpile_weights" not in dynamic


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "uint16", "int64", "bool"])
def test_cpp_constants_of_every_dtype(dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(1)
    value = (rng.standard_normal((3, 5)) * 10).astype(dtype)
    x = relay.var("x", shape=(3, 5), dtype=dtype)
    other = relay.const(value[::-1].copy())
    body = relay.Tuple([relay.equal(x, relay.const(value)), relay.maximum(x, other)])
    mod = relay.IRModule.from_expr(relay.Function([x], body))
    arg = (rng.standard_normal((3, 5)) * 10).astype(dtype)
    got = transpile.compile(mod, backend="cpp")(arg)
    want = relay.evaluate(mod, arg)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
