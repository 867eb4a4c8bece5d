"""int8 conv2d on x86 dot-product instructions: exact results, and relay.build's target in the assembly."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile.relay import parse

# (data dtype, channels, out channels, size, stride, padding (top, left, bottom, right))
CASES = [
    ("uint8", 6, 16, 9, 1, (0, 0, 0, 1)),
    ("int8", 17, 29, 8, 2, (1, 1, 1, 1)),
    ("uint8", 3, 5, 7, 1, (2, 1, 0, 1)),
    ("int8", 4, 20, 6, 1, (1, 0, 1, 0)),
]


def conv_reference(x, w, stride, padding):
    """Integer conv2d (NCHW, OIHW) in int64, cast to int32."""
    top, left, bottom, right = padding
    x = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    w = w.astype(np.int64)
    rows, cols = w.shape[2:]
    out_h = (x.shape[2] - rows) // stride + 1
    out_w = (x.shape[3] - cols) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], out_h, out_w), np.int64)
    for r in range(rows):
        for s in range(cols):
            patch = x[:, :, r : r + stride * out_h : stride, s : s + stride * out_w : stride]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, r, s])
    return out.astype(np.int32)


def conv_program(data_dtype, channels, out_channels, size, stride, padding, weight_dtype="int8") -> str:
    return f"""
def @main(%x: Tensor[(1, {channels}, {size}, {size}), {data_dtype}], %w: Tensor[({out_channels}, {channels}, 3, 3), {weight_dtype}]) {{
  nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding={list(padding)}, kernel_size=[3, 3],
            channels={out_channels}, out_dtype="int32")
}}"""


def extreme_inputs(rng, data_dtype, weight_dtype, x_shape, w_shape):
    """Random values with every third data value at the top of its range and every other weight
    at the bottom of its range: a saturating int16 pair sum (pmaddubsw) would show."""
    info = np.iinfo(data_dtype)
    x = rng.integers(info.min, info.max + 1, x_shape).astype(data_dtype)
    x.flat[::3] = info.max
    winfo = np.iinfo(weight_dtype)
    w = rng.integers(winfo.min, winfo.max + 1, w_shape).astype(weight_dtype)
    w.flat[::2] = winfo.min
    return x, w


def _several_convs_program():
    """One function computing every CASE (and a uint8 x uint8 conv), so one native build covers them."""
    params, calls, shapes = [], [], []
    for i, (dtype, c, k, size, stride, padding) in enumerate(CASES):
        params += [f"%x{i}: Tensor[(1, {c}, {size}, {size}), {dtype}]", f"%w{i}: Tensor[({k}, {c}, 3, 3), int8]"]
        calls.append(
            f"nn.conv2d(%x{i}, %w{i}, strides=[{stride}, {stride}], padding={list(padding)}, kernel_size=[3, 3], "
            f'channels={k}, out_dtype="int32")'
        )
        shapes.append(((1, c, size, size), (k, c, 3, 3), dtype, "int8", stride, padding))
    i = len(CASES)
    params += [f"%x{i}: Tensor[(1, 5, 6, 6), uint8]", f"%w{i}: Tensor[(8, 5, 3, 3), uint8]"]
    calls.append(f'nn.conv2d(%x{i}, %w{i}, padding=[1, 1, 1, 1], kernel_size=[3, 3], channels=8, out_dtype="int32")')
    shapes.append(((1, 5, 6, 6), (8, 5, 3, 3), "uint8", "uint8", 1, (1, 1, 1, 1)))
    text = f"def @main({', '.join(params)}) {{\n  ({', '.join(calls)})\n}}"
    return text, shapes


@pytest.mark.parametrize("backend", ["interpreter", "cpp"])
def test_int8_convolutions_are_exact(backend):
    text, shapes = _several_convs_program()
    rng = np.random.default_rng(7)
    args, expected = [], []
    for x_shape, w_shape, dtype, weight_dtype, stride, padding in shapes:
        x, w = extreme_inputs(rng, dtype, weight_dtype, x_shape, w_shape)
        args += [x, w]
        expected.append(conv_reference(x, w, stride, padding))
    results = transpile.compile(parse(text), backend=backend)(*args)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(got), want)


def _host_flags() -> set:
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


# mcpu -> (schedule kind fragment, /proc/cpuinfo flags needed to run its code here)
INSTRUCTION_SETS = {
    "cascadelake": ("vnni", {"avx512_vnni"}),
    "skylake-avx512": ("16x4_u8i8i32_pmaddubs_exact", {"avx512bw"}),
    "core-avx2": ("8x4_u8i8i32_pmaddubs_exact", {"avx2"}),
    "nehalem": ("4x4_u8i8i32_pmaddubs_exact", {"ssse3"}),
    "x86-64": ("conv2d_int8_vector", set()),
}


@pytest.mark.parametrize("mcpu", list(INSTRUCTION_SETS))
def test_each_instruction_set_is_exact(mcpu):
    """Every tensorized variant, compiled for its CPU and run here (where this CPU has its features)."""
    import tvm

    from transpile.kernels.build import scheduled_functions
    from transpile.kernels.target import kernel_target
    from transpile.pipeline import lower_to_lir

    kind, needs = INSTRUCTION_SETS[mcpu]
    if not needs <= _host_flags():
        pytest.skip(f"this CPU lacks {sorted(needs)}")
    target = kernel_target(f"llvm -mcpu={mcpu}")
    rng = np.random.default_rng(3)
    for dtype, c, k, size, stride, padding in CASES[:2]:
        program = lower_to_lir(parse(conv_program(dtype, c, k, size, stride, padding)), options={"alter_layout": True})
        (kernel,) = program.kernels
        functions, kinds = scheduled_functions([kernel], target)
        assert kind in kinds[kernel.name]
        module = tvm.compile(tvm.IRModule(functions), target=target).mod
        x, w = extreme_inputs(rng, dtype, "int8", (1, c, size, size), (k, c, 3, 3))
        want = conv_reference(x, w, stride, padding)
        out = tvm.runtime.empty(want.shape, "int32")
        module[kernel.name](tvm.runtime.tensor(x), tvm.runtime.tensor(w), out)
        np.testing.assert_array_equal(out.numpy(), want)


def _built_asm(data_dtype, weight_dtype, target):
    from transpile.tvm_compat import relay

    mod = parse(conv_program(data_dtype, 8, 16, 10, 1, (0, 0, 0, 1), weight_dtype))
    weight = np.ones((16, 8, 3, 3), weight_dtype)
    return relay.build(mod, target=target, params={"w": weight}).get_source("asm")


@pytest.mark.parametrize(
    "target, present",
    [
        ("llvm -mcpu=nehalem", "pmaddubsw"),
        ("llvm -mcpu=core-avx2", "vpmaddubsw"),
        ("llvm -mcpu=cascadelake", "vpdpbusd"),
    ],
)
@pytest.mark.parametrize("data_dtype", ["uint8", "int8"])
def test_relay_build_compiles_for_its_target(target, present, data_dtype):
    asm = _built_asm(data_dtype, "int8", target)
    assert present in asm
    if "nehalem" in target:  # SSE only: no AVX registers
        assert "%ymm" not in asm and "%zmm" not in asm


def test_uint8_weights_have_no_dot_instruction():
    asm = _built_asm("uint8", "uint8", "llvm -mcpu=cascadelake")
    assert "vpdpbusd" not in asm and "pmaddubs" not in asm


def test_generic_x86_64_uses_sse2_multiply_adds():
    asm = _built_asm("uint8", "int8", "llvm -mcpu=x86-64")
    assert "pmaddwd" in asm and "paddd" in asm
    assert "%ymm" not in asm and "pmaddubs" not in asm


def test_target_key_names_the_cpu():
    from transpile.kernels.target import kernel_target, target_key

    keys = {target_key(kernel_target(f"llvm -mcpu={cpu}")) for cpu in ("nehalem", "cascadelake", "x86-64")}
    assert len(keys) == 3
    assert target_key(kernel_target("llvm")) == target_key(None)
    assert "+avx2" in target_key(kernel_target("llvm -mcpu=x86-64 -mattr=+avx2"))


def test_llvm_ir_and_c_sources():
    from transpile.tvm_compat import relay

    lib = relay.build(parse(conv_program("uint8", 4, 16, 6, 1, (1, 1, 1, 1))), target="llvm -mcpu=cascadelake")
    assert "llvm.x86.avx512.vpdpbusd" in lib.lib.get_source("ll")
    assert "conv2d" in lib.lib.imported_modules[0].get_source("c")
    with pytest.raises(transpile.TranspileError, match="unknown format"):
        lib.get_source("ptx")
