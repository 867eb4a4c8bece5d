"""Parameter files (.npz, TVM's save_param_dict format) and binding parameters by name."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import transpile
from transpile import TranspileError, relay
from transpile.relay import Constant, Function, IRModule, ParamsBindingError, WeightsFormatError, var
from transpile.relay.params import split_meta_entries
from tvm_bytes import BOOL_DLPACK, FLOAT, INT, UINT, ndarray_record, param_dict_bytes

DATA = Path(__file__).resolve().parent / "data" / "tvm_metadata"

W = np.array([[1.0, -2.0], [0.5, 4.0]], dtype="float32")
B = np.array([7, -8, 2**40], dtype="int64")
HAND_ASSEMBLED = param_dict_bytes(
    [
        ("w", ndarray_record(FLOAT, 32, (2, 2), W.astype("<f4").tobytes())),
        ("bias", ndarray_record(INT, 64, (3,), B.astype("<i8").tobytes())),
        ("flag", ndarray_record(UINT, 1, (), b"\x01")),
    ]
)


# ----- TVM's param-dict format --------------------------------------------------------------------------


def test_save_param_dict_writes_tvms_bytes():
    assert relay.save_param_dict({"w": W, "bias": B, "flag": np.array(True)}) == HAND_ASSEMBLED


def test_load_param_dict_reads_tvms_bytes():
    params = relay.load_param_dict(HAND_ASSEMBLED)
    assert list(params) == ["w", "bias", "flag"]
    np.testing.assert_array_equal(params["w"], W)
    assert params["bias"].dtype == np.int64 and params["bias"][2] == 2**40
    assert params["flag"].dtype == np.bool_ and params["flag"].shape == () and params["flag"]
    params["w"][0, 0] = 9  # the arrays are the caller's own
    assert relay.load_param_dict(HAND_ASSEMBLED)["w"][0, 0] == 1


def test_dlpack_bool_code_and_empty_names_and_utf8():
    data = param_dict_bytes(
        [("", ndarray_record(BOOL_DLPACK, 8, (2,), b"\x00\x01")), ("größe", ndarray_record(FLOAT, 16, (0,), b""))]
    )
    params = relay.load_param_dict(data)
    np.testing.assert_array_equal(params[""], [False, True])
    assert params["größe"].shape == (0,) and params["größe"].dtype == np.float16


@pytest.mark.parametrize(
    "data, message",
    [
        (HAND_ASSEMBLED[:-3], "tensor 'flag' (at byte"),
        (HAND_ASSEMBLED[:30], "claims 3 names, more than its 30 bytes can hold"),
        (param_dict_bytes([("long_name", b"")])[:36], "truncated in name 0 (9 bytes announced)"),
        (b"\x01" * 16, "not a TVM parameter file: magic number 0x0101010101010101"),
        (
            param_dict_bytes([("a", ndarray_record(FLOAT, 32, (1,), b"\0" * 4))], tensor_count=2),
            "1 names but 2 tensors",
        ),
        (
            param_dict_bytes([("a", ndarray_record(12, 32, (1,), b"\0" * 4))]),
            "tensor 'a' (at byte 41): unknown dtype code 12",
        ),
        (
            param_dict_bytes([("a", ndarray_record(FLOAT, 32, (1,), b"\0" * 4, magic=7))]),
            "not a TVM tensor: magic number 0x0000000000000007",
        ),
        (HAND_ASSEMBLED[:16] + struct.pack("<Q", 2**60), "claims 1152921504606846976 names"),
    ],
)
def test_bad_param_dicts(data, message):
    with pytest.raises(WeightsFormatError) as info:
        relay.load_param_dict(data)
    assert isinstance(info.value, TranspileError)
    assert message in info.value.message, info.value.message


def test_unsupported_dtypes_cannot_be_saved():
    with pytest.raises(TranspileError, match="dtype complex64 is not a numeric or bool tensor|complex64"):
        relay.save_param_dict({"c": np.ones(2, "complex64")})
    with pytest.raises(TranspileError, match="parameter names must be strings"):
        relay.save_param_dict({3: np.ones(2)})


def test_agrees_with_installed_tvm_runtime():
    """apache-tvm 0.27 still ships save_param_dict/load_param_dict with the same layout (bool aside)."""
    tvm = pytest.importorskip("tvm")
    params = {"w": W, "bias": B, "half": np.arange(4, dtype="float16").reshape(2, 2), "u8": np.array(3, "uint8")}
    ours = relay.save_param_dict(params)
    theirs = tvm.runtime.load_param_dict(ours)
    assert {k: v.numpy().tolist() for k, v in theirs.items()} == {k: v.tolist() for k, v in params.items()}
    back = relay.load_param_dict(bytes(tvm.runtime.save_param_dict(params)))
    for name, value in params.items():
        assert back[name].dtype == value.dtype
        np.testing.assert_array_equal(back[name], value)


# ----- files: .npz and TVM's format, told apart by content -------------------------------------------


def test_files_round_trip_and_are_recognised_by_content(tmp_path):
    params = {"w": W, "bias": B, "flag": np.array([True, False])}
    for name, fmt in (("p.npz", None), ("p.params", None), ("tvm_named.npz", "tvm"), ("npz_named.params", "npz")):
        path = relay.save_params(params, tmp_path / name, format=fmt)
        assert path == tmp_path / name and path.exists()
        loaded = relay.load_params(path)
        assert list(loaded) == list(params)
        for key, value in params.items():
            assert loaded[key].dtype == value.dtype
            np.testing.assert_array_equal(loaded[key], value)
        assert relay.load_params(str(path)).keys() == loaded.keys()
    assert (tmp_path / "p.params").read_bytes() == relay.save_param_dict(params)
    assert relay.load_params(relay.save_param_dict(params))["bias"][2] == 2**40


def test_load_params_errors(tmp_path):
    np.save(tmp_path / "one.npy", W)
    (tmp_path / "junk.bin").write_bytes(b"hello world")
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 not really a zip")
    cases = {
        tmp_path / "one.npy": "is a .npy file (one unnamed array); parameters need names: use .npz",
        tmp_path / "junk.bin": "is neither an .npz archive nor a TVM parameter file (save_param_dict): "
        "it starts with 68656c6c6f20776f",
        tmp_path / "broken.npz": "not a readable .npz archive",
        tmp_path / "missing.npz": "cannot read parameter file",
    }
    for path, message in cases.items():
        with pytest.raises(TranspileError) as info:
            relay.load_params(path)
        assert str(path) in info.value.message and message in info.value.message, info.value.message


def test_meta_entries_split_off():
    table, named = split_meta_entries({"meta[relay.Constant][1]": 1, "w": 2, "meta[relay.Constant][0]": 0})
    assert table == {"relay.Constant": [0, 1]} and named == {"w": 2}
    with pytest.raises(TranspileError, match=r"not for 0, 2: indices must run from 0 without gaps"):
        split_meta_entries({"meta[relay.Constant][1]": 1, "meta[relay.Constant][3]": 3})


# ----- binding ------------------------------------------------------------------------------------------


def _func():
    x = var("x", shape=(2, 2))
    w = var("w", shape=(2, 2))
    b = var("b", shape=(2,), dtype="int64")
    return Function([x, w, b], relay.add(relay.nn.dense(x, w), relay.cast(b, "float32"))), (x, w, b)


def test_bind_params_by_name_replaces_and_drops_parameters():
    func, (x, w, b) = _func()
    bound = relay.build_module.bind_params_by_name(func, {"w": W, "unknown": np.ones(3)})
    assert bound.params == (x, b)
    assert isinstance(bound.body.args[0].args[1], Constant)
    np.testing.assert_array_equal(bound.body.args[0].args[1].data, W)
    assert relay.bind_params_by_name(func, {}) is func and relay.bind_params_by_name(func, {"zz": 1}) is func


def test_bind_checks_declared_types():
    func, _ = _func()
    cases = [
        (
            {"w": np.ones((2, 3), "float32")},
            "parameter %w of the function has shape (2, 3), but the parameter is declared Tensor[(2, 2), float32]",
        ),
        ({"w": np.ones((2, 2), "float64")}, "has dtype float64, but the parameter is declared Tensor[(2, 2), float32]"),
        ({"b": [1.5, 2.0]}, "has dtype float64, but the parameter is declared Tensor[(2), int64]"),
        ({"w": "weights"}, "has dtype <U7, not a numeric or bool tensor"),
    ]
    for params, message in cases:
        with pytest.raises(ParamsBindingError) as info:
            relay.bind_params_by_name(func, params)
        assert message in info.value.message, info.value.message


def test_python_values_convert_when_nothing_is_lost():
    func, _ = _func()
    bound = relay.bind_params_by_name(func, {"w": [[1, 2], [3, 4]], "b": [5, 6]})
    assert [c.data.dtype for c in (bound.body.args[0].args[1], bound.body.args[1].args[0])] == ["float32", "int64"]


def test_dlpack_values_are_accepted():
    class Tensor:  # only the DLPack protocol, like a torch or jax array
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    func, _ = _func()
    bound = relay.bind_params_by_name(func, {"w": Tensor(W)})
    np.testing.assert_array_equal(bound.body.args[0].args[1].data, W)


def test_duplicate_names_and_non_tensor_types():
    a1, a2 = var("a", shape=(1,)), var("a", shape=(1,))
    func = Function([a1, a2], relay.add(a1, a2))
    assert relay.bind_params_by_name(func, {"other": 1}) is func  # TVM: only a bound name must be unique
    with pytest.raises(
        ParamsBindingError, match=r"cannot bind params\['a'\]: 2 parameters of the function are named %a"
    ):
        relay.bind_params_by_name(func, {"a": np.ones(1, "float32")})
    t = var("t", relay.TupleType([relay.TensorType((1,), "float32")]))
    with pytest.raises(
        ParamsBindingError,
        match=r"parameter %t of the function: its type \(Tensor\[\(1\), float32\],\) is not a tensor type",
    ):
        relay.bind_params_by_name(Function([t], t), {"t": np.ones(1, "float32")})


def test_unannotated_parameters_take_the_values_type():
    u = var("u")
    bound = relay.bind_params_by_name(Function([u], u), {"u": np.arange(3, dtype="int8")})
    assert bound.params == () and bound.body.data.dtype == np.int8


def test_relay_bind():
    x, y, z = var("x", shape=(1,)), var("y", shape=(1,)), var("z", shape=(1,))
    func = Function([x], relay.add(x, y))
    bound = relay.bind(func, {x: np.ones(1, "float32")})
    assert bound.params == () and isinstance(bound.body.args[0], Constant)
    # As in TVM, a variable only the bound values bring in becomes a parameter; y stays free.
    assert relay.bind(func, {x: relay.negative(z)}).params == (z,)
    assert relay.bind(relay.add(x, y), {y: x}).args[1] is x


# ----- transpile.compile/build/emit(..., params=...) --------------------------------------------------


def test_compile_with_params_equals_passing_the_arguments():
    mod = relay.parse((DATA / "tvm012_dense.relay").read_text())
    rng = np.random.default_rng(0)
    x, weight, bias = (rng.standard_normal(s).astype("float32") for s in ((3, 5), (4, 5), (5,)))
    expected = transpile.compile(mod, backend="python")(x, weight, bias)
    with_params = transpile.compile(mod, backend="python", params={"weight": weight, "in_bias": bias})
    np.testing.assert_array_equal(with_params(x), expected)
    reference = np.maximum(x * mod["main"].body.args[0].args[0].args[0].args[1].data, 0) + bias
    np.testing.assert_allclose(expected, reference @ weight.T, rtol=1e-6)
    source = transpile.emit(mod, backend="python", params={"weight": weight, "in_bias": bias})
    assert "\ndef main(x):\n" in source


def test_binding_makes_an_unannotated_model_compile():
    """TVM's conv2d infers an unannotated weight's shape; with the weight bound, ours needs no inference."""
    mod = relay.parse((DATA / "tvm012_conv2d.relay").read_text())
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 10, 10)).astype("float32")
    weight = rng.standard_normal((4, 4, 3, 3)).astype("float32")
    bias = rng.standard_normal(4).astype("float32")
    f = transpile.compile(mod, backend="python", params={"weight": weight})
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    conv = np.einsum("nchwij,ocij->nohw", windows, weight)
    scale = mod["main"].body.args[1].data
    np.testing.assert_allclose(f(x, bias), np.maximum(conv + bias[:, None, None], 0) * scale, rtol=1e-5, atol=1e-5)


def test_compile_params_errors_name_the_parameter_and_warn_about_unknown_names():
    mod = relay.parse((DATA / "tvm012_dense.relay").read_text())
    with pytest.raises(ParamsBindingError, match=r"parameter %weight of @main has shape \(5, 4\)"):
        transpile.compile(mod, backend="python", params={"weight": np.ones((5, 4), "float32")})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = transpile.build(mod, backend="python", params={"wieght": np.ones((4, 5), "float32")}).load()
    assert "params 'wieght' match no parameter of @main and are ignored (its parameters: %x, %weight, %in_bias)" in str(
        caught[0].message
    )
    assert f(np.ones((3, 5), "float32"), np.ones((4, 5), "float32"), np.ones(5, "float32")).shape == (3, 4)


def test_params_bind_the_chosen_entry():
    x = var("x", shape=(1,))
    k = var("k", shape=(1,))
    mod = IRModule({"main": Function([x], x), "scale": Function([x, k], relay.multiply(x, k))})
    f = transpile.compile(mod, backend="python", entry="scale", params={"k": np.array([3.0], "float32")})
    np.testing.assert_array_equal(f(np.array([2.0], "float32")), [6.0])
