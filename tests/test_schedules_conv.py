"""Convolution schedules: packed NCHW[x]c conv, depthwise and max pool, NCHW depthwise, NCHW direct conv.

Each case is a kernel the pipeline produces for ResNet-50 / MobileNet v2 (the same kinds of shapes,
made small), compiled in one build and checked against the registry's numpy implementation; the
schedule chosen is checked too (a failing schedule would silently fall back to the default one).
Also: FLOP counts (transpile.kernels.flops).
"""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

import transpile.relay as relay  # noqa: E402
from transpile.kernels.build import build_kernels  # noqa: E402
from transpile.kernels.flops import conv_flops, conv_geometry, kernel_flops  # noqa: E402
from transpile.kernels.schedules.conv import native_tile  # noqa: E402
from transpile.kernels.schedules.conv_packed import pixel_tile  # noqa: E402
from transpile.kernels.schedules.depthwise import row_tile  # noqa: E402

from test_kernels import make_kernel, random_args, run_kernel  # noqa: E402

T = relay.TensorType
F32 = "float32"


def packed_conv(c, h, k, kernel, stride, bi=16, bo=16, depthwise=False, epilogue="bias_relu", dilation=1):
    """(builder, types) of contrib_conv2d_NCHWc + epilogue on NCHW{bi}c data, as AlterOpLayout emits it."""
    pad = (kernel // 2) * dilation
    weight = (k // bo, 1, kernel, kernel, 1, bo) if depthwise else (k // bo, c // bi, kernel, kernel, bi, bo)
    oh = (h + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1

    def build(x, w, b, r=None):
        y = relay.nn.contrib_conv2d_NCHWc(
            x, w, channels=k, kernel_size=(kernel, kernel), strides=(stride, stride), padding=(pad, pad),
            dilation=(dilation, dilation), groups=c if depthwise else 1, data_layout=f"NCHW{bi}c",
            kernel_layout=f"OIHW{1 if depthwise else bi}i{bo}o", out_layout=f"NCHW{bo}c",
        )
        y = relay.add(y, b)
        if r is not None:
            y = relay.add(y, r)
        return relay.clip(y, 0.0, 6.0) if epilogue == "clip" else relay.nn.relu(y)

    types = [T((1, c // bi, h, h, bi), F32), T(weight, F32), T((k // bo, 1, 1, bo), F32)]
    if epilogue == "residual":
        types.append(T((1, k // bo, oh, oh, bo), F32))
    return build, types


def nchw_depthwise(c, h, stride, epilogue=True):
    def build(x, w, b=None):
        y = relay.nn.conv2d(x, w, strides=(stride, stride), padding=(1, 1), groups=c, channels=c, kernel_size=(3, 3))
        return relay.clip(relay.add(y, b), 0.0, 6.0) if b is not None else y

    types = [T((1, c, h, h), F32), T((c, 1, 3, 3), F32)] + ([T((c, 1, 1), F32)] if epilogue else [])
    return build, types


def nchw_conv(c, h, k, kernel, stride):
    def build(x, w, b):
        y = relay.nn.conv2d(x, w, strides=(stride, stride), padding=(kernel // 2, kernel // 2))
        return relay.nn.relu(relay.add(y, b))

    return build, [T((1, c, h, h), F32), T((k, c, kernel, kernel), F32), T((k, 1, 1), F32)]


def packed_max_pool(c, h, block=16):
    def build(x, b):
        y = relay.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=f"NCHW{block}c")
        return relay.nn.relu(relay.add(y, b))

    return build, [T((1, c // block, h, h, block), F32), T((c // block, 1, 1, block), F32)]


# name -> ((builder, types), expected schedule kind)
CASES = {
    "packed_3x3": (packed_conv(32, 14, 32, 3, 1), "conv2d_NCHWc"),
    "packed_3x3_stride2": (packed_conv(32, 14, 32, 3, 2), "conv2d_NCHWc"),
    "packed_1x1_residual": (packed_conv(32, 7, 64, 1, 1, epilogue="residual"), "conv2d_NCHWc"),
    "packed_1x1_stride2": (packed_conv(64, 14, 32, 1, 2), "conv2d_NCHWc"),
    "packed_7x7_rgb": (packed_conv(3, 30, 16, 7, 2, bi=3), "conv2d_NCHWc"),
    "packed_block8_in": (packed_conv(24, 14, 48, 1, 1, bi=8), "conv2d_NCHWc"),
    "packed_block8_out": (packed_conv(32, 14, 24, 1, 1, bo=8), "conv2d_NCHWc"),
    "packed_1x1_on_1x1": (packed_conv(64, 1, 40, 1, 1, bo=8), "conv2d_NCHWc"),
    "packed_dilated": (packed_conv(16, 12, 16, 3, 1, dilation=2), "conv2d_NCHWc"),
    "packed_depthwise": (packed_conv(32, 14, 32, 3, 1, depthwise=True, epilogue="clip"), "depthwise_NCHWc"),
    "packed_depthwise_stride2": (packed_conv(48, 15, 48, 3, 2, depthwise=True, epilogue="clip"), "depthwise_NCHWc"),
    "packed_depthwise_block8": (packed_conv(24, 10, 24, 3, 1, bi=8, bo=8, depthwise=True), "depthwise_NCHWc"),
    "packed_max_pool": (packed_max_pool(32, 15), "pool_NCHWc"),
    "nchw_depthwise": (nchw_depthwise(16, 20, 1), "depthwise_nchw"),
    "nchw_depthwise_stride2": (nchw_depthwise(24, 21, 2), "depthwise_nchw"),
    "nchw_depthwise_small": (nchw_depthwise(40, 7, 1, epilogue=False), "depthwise_nchw"),
    "nchw_3x3": (nchw_conv(16, 14, 32, 3, 1), "conv2d_nchw"),
    "nchw_1x1": (nchw_conv(64, 7, 32, 1, 1), "conv2d_nchw"),
    "nchw_3x3_stride2": (nchw_conv(16, 15, 16, 3, 2), "conv2d_nchw"),
}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    cases = {name: make_kernel(name, build, *types) for name, ((build, types), _) in CASES.items()}
    library = build_kernels([k for k, _ in cases.values()], tmp_path_factory.mktemp("conv_kernels"))
    return library, cases


@pytest.mark.parametrize("name", list(CASES))
def test_conv_schedule_is_chosen_and_matches_numpy(compiled, name):
    library, cases = compiled
    kernel, function = cases[name]
    assert library.schedules[name] == CASES[name][1]
    args = random_args(kernel, seed=3)
    expected = relay.evaluate(function, *args)
    (got,) = run_kernel(library, kernel, args)
    assert got.shape == expected.shape
    # float32 sums in another order: relative to the output's magnitude
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_c_target_gets_the_packed_schedules_without_vector_or_parallel_loops():
    from transpile.kernels.lower import lower_kernel
    from transpile.kernels.schedules import choose_schedule
    from transpile.kernels.target import c_target

    for name in ("packed_3x3", "packed_depthwise", "nchw_depthwise"):
        (build, types), kind = CASES[name]
        kernel, _ = make_kernel(name, build, *types)
        mod, chosen = choose_schedule(lower_kernel(kernel, schedule=False), kernel, c_target())
        script = mod[name].script()
        assert chosen == kind and "T.vectorized" not in script and "T.parallel" not in script


def test_grouped_packed_conv_falls_back_to_the_unpacked_compute(tmp_path):
    """groups neither 1 nor the channel count: no direct blocked compute, still correct."""
    kernel, function = make_kernel(
        "grouped",
        lambda x, w: relay.nn.contrib_conv2d_NCHWc(
            x, w, channels=16, kernel_size=(3, 3), padding=(1, 1), groups=2,
            data_layout="NCHW4c", kernel_layout="OIHW4i4o", out_layout="NCHW4c",
        ),
        T((1, 4, 6, 6, 4), F32),
        T((4, 2, 3, 3, 4, 4), F32),
    )
    library = build_kernels([kernel], tmp_path)
    assert library.schedules["grouped"] not in ("conv2d_NCHWc", "depthwise_NCHWc")
    args = random_args(kernel)
    np.testing.assert_allclose(run_kernel(library, kernel, args)[0], relay.evaluate(function, *args), rtol=1e-4, atol=1e-4)


def test_register_tiles_fit_the_registers():
    # 16 accumulators-worth of budget: the widest divisor of the row up to 14 columns
    assert pixel_tile(56, 56, 24) == (1, 14)
    assert pixel_tile(28, 28, 24) == (1, 14)
    assert pixel_tile(14, 14, 24) == (1, 14)
    assert pixel_tile(12, 6, 24) == (2, 6)  # short rows: two of them share each weight vector
    assert pixel_tile(7, 7, 24) == (1, 7)  # odd height: no second row
    assert pixel_tile(1, 1, 24) == (1, 1)
    assert pixel_tile(56, 56, 6) == (1, 4)  # 16-channel blocks on 4-lane vectors: 4 registers each
    # NCHW direct conv: columns divide the row (no bounds test in the vector loop), 16 channels
    assert native_tile(128, 28, 16) == (16, 14)
    assert native_tile(64, 112, 16) == (16, 16)
    assert native_tile(24, 56, 16) == (12, 14)
    assert native_tile(512, 7, 16) == (16, 7)
    assert row_tile(112, 112, 16) == (8, 16)  # NCHW depthwise
    assert row_tile(56, 56, 16) == (8, 14)
    assert row_tile(14, 14, 16) == (7, 14)
    assert row_tile(7, 7, 16) == (7, 7)
    assert row_tile(56, 56, 16, stride=2) == (2, 14)


def test_scheduled_packed_conv_keeps_accumulators_in_registers():
    from transpile.kernels.lower import lower_kernel
    from transpile.kernels.schedules import choose_schedule
    from transpile.kernels.target import host_target

    build, types = packed_conv(64, 14, 64, 1, 1, epilogue="residual")  # enough work to run in parallel
    kernel, _ = make_kernel("k", build, *types)
    mod, kind = choose_schedule(lower_kernel(kernel, schedule=False), kernel, host_target())
    script = mod["k"].script()
    assert kind == "conv2d_NCHWc"
    assert 'scope="local"' in script and "T.unroll" in script and "T.vectorized(16)" in script
    assert "T.parallel" in script
    assert 'T.sblock("T_add' not in script and 'T.sblock("compute")' not in script  # epilogue in the write-back


# ----- FLOP counts -------------------------------------------------------------------------------


def test_conv_flops_formula():
    assert conv_flops(1, 64, 56, 56, 64, 1, 3, 3) == 2 * 64 * 56 * 56 * 64 * 9
    assert conv_flops(1, 32, 112, 112, 32, 32, 3, 3) == 2 * 32 * 112 * 112 * 9  # depthwise


@pytest.mark.parametrize(
    "name, expected",
    [
        ("packed_3x3", 2 * 32 * 14 * 14 * 32 * 9),
        ("packed_3x3_stride2", 2 * 32 * 7 * 7 * 32 * 9),
        ("packed_7x7_rgb", 2 * 16 * 15 * 15 * 3 * 49),
        ("packed_depthwise", 2 * 32 * 14 * 14 * 9),
        ("nchw_depthwise_stride2", 2 * 24 * 11 * 11 * 9),
        ("nchw_1x1", 2 * 32 * 7 * 7 * 64),
    ],
)
def test_kernel_flops_counts_convolutions_in_any_layout(name, expected):
    (build, types), _ = CASES[name]
    kernel, _ = make_kernel(name, build, *types)
    assert kernel_flops(kernel) == expected


def test_kernel_flops_of_matmuls_and_uncounted_kernels():
    dense, _ = make_kernel("d", lambda a, b: relay.nn.dense(a, b), T((8, 32), F32), T((16, 32), F32))
    assert kernel_flops(dense) == 2 * 8 * 16 * 32
    bmm, _ = make_kernel("b", lambda a, b: relay.nn.batch_matmul(a, b), T((2, 8, 16), F32), T((2, 24, 16), F32))
    assert kernel_flops(bmm) == 2 * 2 * 8 * 24 * 16
    relu, _ = make_kernel("r", lambda a: relay.nn.relu(a), T((8, 8), F32))
    assert kernel_flops(relu) is None


def test_conv_geometry_is_layout_free():
    (build, types), _ = CASES["packed_3x3_stride2"]
    _, function = make_kernel("g", build, *types)
    call = function.body.args[0].args[0]  # relu(add(conv, b))
    geometry = conv_geometry(call.op.name, call.attrs, [a.checked_type for a in call.args], call.checked_type)
    assert geometry == {
        "in_channels": 32, "out_channels": 32, "in_size": (14, 14), "out_size": (7, 7),
        "kernel": (3, 3), "stride": 2, "groups": 1,
    }
