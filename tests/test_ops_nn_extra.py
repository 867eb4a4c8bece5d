"""nn.lrn, conv3d, conv1d/3d_transpose, 3-D and adaptive pools, depth/space, mirror_pad: relations, numpy vs torch."""

from __future__ import annotations

import numpy as np
import pytest

from test_ops_nn_support import Any, T, infer, run
from transpile import relay
from transpile.relay.op import RelationError, registry

rng = np.random.default_rng(11)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- schemas, builders, text


def test_schemas_follow_tvm_attribute_order_and_defaults():
    lrn = registry.get("nn.lrn")
    assert lrn.attr_names == ("size", "axis", "bias", "alpha", "beta")
    assert lrn.defaults() == {"size": 5, "axis": 1, "bias": 2.0, "alpha": 0.0001, "beta": 0.75}
    assert registry.get("nn.conv3d").defaults()["kernel_layout"] == "OIDHW"
    for name, kernel in (("nn.conv1d_transpose", "IOW"), ("nn.conv3d_transpose", "IODHW")):
        opdef = registry.get(name)
        assert opdef.attr_names[:5] == ("channels", "kernel_size", "strides", "output_padding", "padding")
        assert opdef.defaults()["kernel_layout"] == kernel
    assert registry.get("nn.avg_pool3d").attr_names[-1] == "count_include_pad"
    assert registry.get("nn.adaptive_max_pool3d").defaults()["layout"] == "NCDHW"
    assert registry.get("nn.adaptive_avg_pool1d").defaults()["layout"] == "NCW"
    assert registry.get("nn.depth_to_space").attr_names == ("block_size", "layout", "mode")
    assert registry.get("nn.mirror_pad").attr_names == ("mode", "pad_width")


def test_builders_follow_the_tvm_python_signatures():
    x = relay.var("x", shape=(1, 4, 6, 6, 6))
    assert relay.nn.lrn(x, 3).attrs.alpha == 0.00001  # the Python default, not the C++ one
    conv = relay.nn.conv3d(x, relay.var("w", shape=(2, 4, 3, 3, 3)), 2, 1)  # strides, padding
    assert conv.attrs.strides == (2, 2, 2) and conv.attrs.padding == (1,) * 6
    assert relay.nn.max_pool3d(x, 2).attrs.pool_size == (2, 2, 2)
    assert relay.nn.avg_pool3d(x, pool_size=3, padding=(1, 0, 1)).attrs.padding == (1, 0, 1, 1, 0, 1)
    assert relay.nn.adaptive_avg_pool3d(x).attrs.output_size == ()
    transpose = relay.nn.conv1d_transpose(relay.var("y", shape=(1, 4, 5)), relay.var("v", shape=(4, 2, 3)), (2,), (1,))
    assert transpose.attrs.strides == (2,) and transpose.attrs.padding == (1,)
    pad = relay.nn.mirror_pad(x, ((0, 0),) * 2 + ((1, 1),) * 3, "REFLECT")
    assert pad.attrs.mode == "REFLECT" and pad.attrs.pad_width[-1] == (1, 1)


@pytest.mark.parametrize(
    "call",
    [
        "nn.lrn(%x, size=3, alpha=0.001f)",
        "nn.conv3d(%x, %w, padding=[1, 1, 1], groups=2)",
        "nn.conv3d_transpose(%x, %v, strides=[2, 2, 2], output_padding=[1, 1, 1])",
        "nn.max_pool3d(%x, pool_size=[2, 2, 2], ceil_mode=True)",
        "nn.avg_pool3d(%x, pool_size=[3, 3, 3], padding=[1, 1, 1], count_include_pad=True)",
        "nn.adaptive_avg_pool3d(%x, output_size=[2, 1, 2])",
        'nn.mirror_pad(%x, mode="REFLECT", pad_width=[[0, 0], [0, 0], [1, 1], [1, 1], [1, 1]])',
    ],
)
def test_text_round_trip(call):
    source = (
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(1, 4, 4, 4, 4), float32], %w: Tensor[(6, 2, 3, 3, 3), float32], "
        f"%v: Tensor[(4, 2, 3, 3, 3), float32]) {{ {call} }}"
    )
    mod = relay.transform.InferType()(relay.parse(source))
    again = relay.parse(mod.astext())
    assert relay.structural_equal(mod, relay.transform.InferType()(again))


# ---------------------------------------------------------------- relations


@pytest.mark.parametrize(
    "op, args, given, expected",
    [
        ("nn.lrn", [T(2, 5, 3, 3)], {}, T(2, 5, 3, 3)),
        ("nn.conv3d", [T(1, 4, 8, 8, 8), T(6, 4, 3, 3, 3)], dict(padding=[1]), T(1, 6, 8, 8, 8)),
        ("nn.conv3d", [T(1, 4, 8, 9, 10), T(6, 2, 3, 3, 3)], dict(groups=2, strides=[2, 1, 2]), T(1, 6, 3, 7, 4)),
        ("nn.conv3d", [T(1, 4, 8, 8, 8), T(4, 4, 3, 3, 3)], dict(padding=[1, 0, 2, 0, 1, 1]), T(1, 4, 7, 7, 9)),
        ("nn.conv3d", [T(1, 4, 8, 8, 8), T(4, 4, 3, 3, 3)], dict(dilation=[2, 1, 1]), T(1, 4, 4, 6, 6)),
        (
            "nn.conv3d",
            [T(1, 3, 5, 5, 5), T(3, 2, 3, 3, 3)],
            dict(groups=3, channels=6, kernel_size=[3, 3, 3]),
            T(1, 6, 3, 3, 3),
        ),
        (
            "nn.conv3d",
            [T(1, 5, 6, 7, 4), T(3, 3, 3, 4, 8)],
            dict(data_layout="NDHWC", kernel_layout="DHWIO", out_dtype="float16"),
            T(1, 3, 4, 5, 8, dtype="float16"),
        ),
        ("nn.conv3d", [T(Any(), 4, 8, 8, 8), T(6, 4, 3, 3, 3)], {}, T(Any(), 6, 6, 6, 6)),
        ("nn.conv1d_transpose", [T(1, 4, 5), T(4, 3, 3)], dict(strides=[2], padding=[1]), T(1, 3, 9)),
        (
            "nn.conv1d_transpose",
            [T(1, 4, 5), T(4, 3, 3)],
            dict(strides=[2], padding=[1, 0], output_padding=[1]),
            T(1, 3, 11),
        ),
        ("nn.conv1d_transpose", [T(1, 4, 5), T(4, 3, 3)], dict(groups=2), T(1, 6, 7)),
        ("nn.conv1d_transpose", [T(1, 5, 4), T(3, 4, 3)], dict(data_layout="NWC", kernel_layout="WIO"), T(1, 7, 3)),
        ("nn.conv3d_transpose", [T(1, 4, 3, 4, 5), T(4, 2, 2, 3, 3)], dict(strides=[2, 2, 2]), T(1, 2, 6, 9, 11)),
        (
            "nn.conv3d_transpose",
            [T(1, 4, 3, 3, 3), T(4, 1, 3, 3, 3)],
            dict(groups=4, channels=4, kernel_size=[3, 3, 3], padding=[1]),
            T(1, 4, 3, 3, 3),
        ),
        ("nn.max_pool3d", [T(1, 2, 8, 8, 8)], dict(pool_size=[2, 2, 2], strides=[2, 2, 2]), T(1, 2, 4, 4, 4)),
        ("nn.avg_pool3d", [T(1, 2, 5, 6, 7)], dict(pool_size=[3, 3, 3], padding=[1, 1, 1]), T(1, 2, 5, 6, 7)),
        ("nn.max_pool3d", [T(1, 5, 6, 7, 2)], dict(pool_size=[2, 2, 2], layout="NDHWC"), T(1, 4, 5, 6, 2)),
        # ceil_mode keeps a last window that starts in the right padding (TVM's relation; PyTorch drops it).
        (
            "nn.max_pool3d",
            [T(1, 1, 5, 6, 4)],
            dict(pool_size=[2], strides=[2], padding=[1], ceil_mode=True),
            T(1, 1, 4, 4, 3),
        ),
        (
            "nn.max_pool2d",
            [T(1, 1, 5, 5)],
            dict(pool_size=[2, 2], strides=[2, 2], padding=[1, 1], ceil_mode=True),
            T(1, 1, 4, 4),
        ),
        ("nn.adaptive_avg_pool1d", [T(2, 3, 10)], dict(output_size=[4]), T(2, 3, 4)),
        ("nn.adaptive_max_pool1d", [T(2, 10, 3)], dict(layout="NWC"), T(2, 10, 3)),
        ("nn.adaptive_avg_pool3d", [T(1, 2, 5, 6, 7)], dict(output_size=[2, 3, 4]), T(1, 2, 2, 3, 4)),
        ("nn.adaptive_max_pool3d", [T(1, 2, 5, 6, 7)], dict(output_size=[1]), T(1, 2, 1, 1, 1)),
        ("nn.adaptive_avg_pool3d", [T(1, 2, 5, 6, 7)], dict(output_size=[None, 2, None]), T(1, 2, 5, 2, 7)),
        ("nn.depth_to_space", [T(2, 12, 3, 4)], dict(block_size=2), T(2, 3, 6, 8)),
        ("nn.depth_to_space", [T(2, 3, 4, 18)], dict(block_size=3, layout="NHWC", mode="CRD"), T(2, 9, 12, 2)),
        ("nn.space_to_depth", [T(2, 3, 6, 8)], dict(block_size=2), T(2, 12, 3, 4)),
        ("nn.mirror_pad", [T(3, 4, 5)], dict(pad_width=[[0, 0], [1, 3], [2, 2]]), T(3, 8, 9)),
        ("nn.mirror_pad", [T(Any(), 4)], dict(pad_width=[[1, 1], [1, 2]], mode="REFLECT"), T(Any(), 7)),
    ],
)
def test_relations(op, args, given, expected):
    assert infer(op, args, **given) == expected


@pytest.mark.parametrize(
    "op, args, given, message",
    [
        ("nn.lrn", [T(2, 5, 3, 3)], dict(axis=4), r"axis 4 is out of range for a tensor of rank 4"),
        ("nn.lrn", [T(2, 5, 3, 3)], dict(size=0), r"size must be >= 1"),
        ("nn.conv3d", [T(1, 4, 8, 8, 8), T(6, 3, 3, 3, 3)], {}, r"channel mismatch: data Tensor\[\(1, 4, 8, 8, 8\)"),
        ("nn.conv3d", [T(1, 4, 8, 8), T(6, 4, 3, 3, 3)], {}, r"data must have rank 5 for layout NCDHW"),
        (
            "nn.conv3d",
            [T(1, 4, 8, 8, 8), T(6, 4, 3, 3, 3)],
            dict(padding=[1, 1]),
            r"padding must have 1, 3 or 6 values",
        ),
        ("nn.conv3d", [T(1, 4, 2, 8, 8), T(6, 4, 3, 3, 3)], {}, r"the output depth would be 0"),
        ("nn.conv3d", [T(1, 4, 8, 8, 8), T(6, 4, 3, 3, 3)], dict(data_layout="NCHWD8c"), r"not supported"),
        (
            "nn.conv1d_transpose",
            [T(1, 4, 5), T(3, 2, 3)],
            {},
            r"data Tensor\[\(1, 4, 5\), float32\] has 4 input channels but weight",
        ),
        ("nn.conv3d_transpose", [T(1, 4, 3, 3, 3), T(4, 2, 3, 3)], {}, r"weight must have rank 5"),
        (
            "nn.conv3d_transpose",
            [T(1, 4, 1, 3, 3), T(4, 2, 1, 3, 3)],
            dict(padding=[1]),
            r"the output depth would be -1",
        ),
        ("nn.conv1d_transpose", [T(1, 4, 5), T(4, 2, 3)], dict(groups=3), r"not divisible by groups \(3\)"),
        ("nn.max_pool3d", [T(1, 2, 8, 8)], dict(pool_size=[2, 2, 2]), r"does not have the rank of layout 'NCDHW'"),
        ("nn.avg_pool3d", [T(1, 2, 8, 8, 8)], dict(pool_size=[2, 2, 2], padding=[1, 1]), r"1, 3 or 6 values"),
        (
            "nn.max_pool3d",
            [T(1, 2, 8, 8, 8)],
            dict(pool_size=[2, 2], strides=[1]),
            r"pool_size must have 1 or 3 values",
        ),
        ("nn.adaptive_avg_pool3d", [T(1, 2, 4, 4, 4)], dict(output_size=[2, 2]), r"must have 0, 1 or 3 values"),
        ("nn.adaptive_max_pool1d", [T(1, 2, 4)], dict(output_size=[2, 2]), r"must have 0 or 1 values"),
        ("nn.adaptive_avg_pool1d", [T(1, 2, 4)], dict(layout="NCH"), r"must contain W"),
        ("nn.depth_to_space", [T(1, 6, 2, 2)], dict(block_size=2), r"6 channels .* not divisible by block_size²"),
        ("nn.depth_to_space", [T(1, 8, 2, 2)], dict(block_size=2, mode="DRC"), r"mode must be DCR or CRD"),
        ("nn.depth_to_space", [T(1, 8, 2, 2)], dict(block_size=0), r"block_size must be >= 1"),
        ("nn.space_to_depth", [T(1, 2, 5, 4)], dict(block_size=2), r"the H dimension \(5\) .* not divisible"),
        ("nn.space_to_depth", [T(1, 2, 4, 4)], dict(layout="NCHWc"), r"layout 'NCHWc' is not supported"),
        ("nn.mirror_pad", [T(3, 4)], dict(pad_width=[[0, 0], [4, 0]], mode="REFLECT"), r"mirrors more than dim - 1"),
        ("nn.mirror_pad", [T(3, 4)], dict(pad_width=[[0, 0], [5, 0]]), r"mirrors more than dim \(SYMMETRIC\) = 4"),
        ("nn.mirror_pad", [T(3, 4)], dict(pad_width=[[0, 0]]), r"has 1 pairs but data"),
        (
            "nn.mirror_pad",
            [T(3, 4)],
            dict(pad_width=[[0, 0], [1, 1]], mode="EDGE"),
            r"mode must be REFLECT or SYMMETRIC",
        ),
        ("nn.mirror_pad", [T(3, 4)], dict(pad_width=[[0, -1], [1, 1]]), r"pairs? of widths >= 0"),
    ],
)
def test_relation_errors(op, args, given, message):
    with pytest.raises(RelationError, match=message):
        infer(op, args, **given)


# ---------------------------------------------------------------- numpy against PyTorch and ONNX


@pytest.fixture(scope="module")
def F():
    pytest.importorskip("torch")
    import torch.nn.functional

    return torch.nn.functional


def torch_of(F, function, *arrays, **kwargs):
    import torch

    return function(*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in arrays], **kwargs).numpy()


@pytest.mark.parametrize("size", [3, 4, 5])
def test_lrn_matches_torch(F, size):
    x = rand(2, 7, 3, 4)
    got = run("nn.lrn", x, size=size, alpha=0.01, beta=0.6, bias=1.5)
    np.testing.assert_allclose(got, torch_of(F, F.local_response_norm, x, size, 0.01, 0.6, 1.5), rtol=1e-5)


def test_lrn_along_the_last_axis_and_in_float16():
    x = rand(2, 3, 6)
    nchw = run("nn.lrn", np.moveaxis(x, 2, 1), size=3)
    np.testing.assert_allclose(run("nn.lrn", x, size=3, axis=-1), np.moveaxis(nchw, 1, 2), rtol=1e-6)
    half = run("nn.lrn", x.astype(np.float16), size=3, axis=2)
    np.testing.assert_allclose(half.astype(np.float32), np.moveaxis(nchw, 1, 2), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize(
    "wshape, given, torch_kwargs",
    [
        ((6, 4, 3, 3, 3), dict(padding=[1]), dict(padding=1)),
        (
            (6, 2, 3, 2, 3),
            dict(groups=2, strides=[2, 1, 2], dilation=[1, 2, 1]),
            dict(groups=2, stride=(2, 1, 2), dilation=(1, 2, 1)),
        ),
        ((8, 1, 3, 3, 3), dict(groups=4, padding=[1, 0, 1]), dict(groups=4, padding=(1, 0, 1))),
    ],
)
def test_conv3d_matches_torch(F, wshape, given, torch_kwargs):
    x, w = rand(2, 4, 5, 6, 7), rand(*wshape)
    np.testing.assert_allclose(
        run("nn.conv3d", x, w, **given), torch_of(F, F.conv3d, x, w, **torch_kwargs), rtol=1e-4, atol=1e-4
    )


def test_conv3d_asymmetric_padding_layouts_and_channel_multiplier(F):
    x, w = rand(1, 3, 4, 5, 6), rand(3, 2, 2, 3, 2)
    padded = np.pad(x, [(0, 0), (0, 0), (1, 0), (0, 2), (1, 1)])
    # Depthwise with a channel multiplier: weight (C, m, ...) is the grouped weight (C * m, 1, ...).
    expected = torch_of(F, F.conv3d, padded, w.reshape(6, 1, 2, 3, 2), groups=3)
    got = run("nn.conv3d", x, w, groups=3, channels=6, kernel_size=[2, 3, 2], padding=[1, 0, 1, 0, 2, 1])
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    plain = rand(5, 3, 2, 2, 2)
    ndhwc = run(
        "nn.conv3d",
        np.moveaxis(x, 1, -1),
        np.transpose(plain, (2, 3, 4, 1, 0)),
        data_layout="NDHWC",
        kernel_layout="DHWIO",
        out_layout="NCDHW",
    )
    np.testing.assert_allclose(ndhwc, torch_of(F, F.conv3d, x, plain), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "given, torch_kwargs",
    [
        (dict(strides=[2], padding=[1], output_padding=[1]), dict(stride=2, padding=1, output_padding=1)),
        (dict(groups=2, dilation=[2], padding=[2]), dict(groups=2, dilation=2, padding=2)),
        (dict(strides=[3], padding=[4], output_padding=[2]), dict(stride=3, padding=4, output_padding=2)),
    ],
)
def test_conv1d_transpose_matches_torch(F, given, torch_kwargs):
    x, w = rand(2, 4, 6), rand(4, 3, 3)
    got = run("nn.conv1d_transpose", x, w, **given)
    np.testing.assert_allclose(got, torch_of(F, F.conv_transpose1d, x, w, **torch_kwargs), rtol=1e-4, atol=1e-4)


def test_conv1d_transpose_asymmetric_padding_crops_the_full_output(F):
    x, w = rand(1, 2, 5), rand(2, 3, 4)
    full = torch_of(F, F.conv_transpose1d, x, w, stride=2)
    np.testing.assert_allclose(
        run("nn.conv1d_transpose", x, w, strides=[2], padding=[1, 2]), full[..., 1:-2], rtol=1e-5
    )


@pytest.mark.parametrize(
    "given, torch_kwargs",
    [
        (
            dict(strides=[2, 1, 2], padding=[1, 0, 1], output_padding=[1, 0, 0]),
            dict(stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0)),
        ),
        (dict(groups=2, dilation=[1, 2, 1]), dict(groups=2, dilation=(1, 2, 1))),
    ],
)
def test_conv3d_transpose_matches_torch(F, given, torch_kwargs):
    x, w = rand(1, 4, 3, 4, 3), rand(4, 2, 3, 2, 3)
    got = run("nn.conv3d_transpose", x, w, **given)
    np.testing.assert_allclose(got, torch_of(F, F.conv_transpose3d, x, w, **torch_kwargs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "kind, given, torch_kwargs",
    [
        (
            "max",
            dict(pool_size=[2, 3, 2], strides=[2, 2, 1], padding=[1, 1, 0]),
            dict(kernel_size=(2, 3, 2), stride=(2, 2, 1), padding=(1, 1, 0)),
        ),
        (
            "max",
            dict(pool_size=[3], strides=[2], padding=[1], ceil_mode=True),
            dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
        ),
        ("max", dict(pool_size=[2], dilation=[2, 1, 2]), dict(kernel_size=2, stride=1, dilation=(2, 1, 2))),
        (
            "avg",
            dict(pool_size=[3], padding=[1], strides=[2]),
            dict(kernel_size=3, padding=1, stride=2, count_include_pad=False),
        ),
        ("avg", dict(pool_size=[3], padding=[1], count_include_pad=True), dict(kernel_size=3, padding=1, stride=1)),
        (
            "avg",
            dict(pool_size=[3], strides=[2], padding=[1], ceil_mode=True, count_include_pad=True),
            dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
        ),
    ],
)
def test_pool3d_matches_torch(F, kind, given, torch_kwargs):
    x = rand(2, 3, 5, 6, 7)
    function = F.max_pool3d if kind == "max" else F.avg_pool3d
    np.testing.assert_allclose(
        run(f"nn.{kind}_pool3d", x, **given), torch_of(F, function, x, **torch_kwargs), rtol=1e-5
    )


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_ceil_mode_keeps_a_window_starting_in_the_right_padding_like_tvm(F, kind):
    # 5 + 2 * 1 padding, windows of 2 every 2: TVM's relation has 4 windows, the last one on padding
    # only (max -inf, average 0); PyTorch (and ONNX, and topi since 0.20) stop at 3.
    x = rand(1, 2, 5, 5)
    given = dict(pool_size=[2, 2], strides=[2, 2], padding=[1, 1], ceil_mode=True)
    got = run(f"nn.{kind}_pool2d", x, **given, **({"count_include_pad": True} if kind == "avg" else {}))
    function = F.max_pool2d if kind == "max" else F.avg_pool2d
    np.testing.assert_allclose(got[..., :3, :3], torch_of(F, function, x, 2, 2, 1, ceil_mode=True), rtol=1e-6)
    assert np.all(got[..., 3, :] == (-np.inf if kind == "max" else 0)) and np.all(got[..., :, 3] == got[..., 3, :])


@pytest.mark.parametrize("nd, output_size", [(1, [4]), (1, [7]), (3, [2, 3, 4]), (3, [3])])
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_adaptive_pools_match_torch(F, nd, output_size, kind):
    x = rand(2, 3, 7) if nd == 1 else rand(1, 2, 5, 6, 7)
    function = getattr(F, f"adaptive_{kind}_pool{nd}d")
    expected = torch_of(F, function, x, output_size if len(output_size) > 1 else output_size[0])
    np.testing.assert_allclose(run(f"nn.adaptive_{kind}_pool{nd}d", x, output_size=output_size), expected, atol=1e-6)


@pytest.fixture(scope="module")
def onnx_reference():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    def evaluate(op_type, inputs, **attributes):
        names = [f"in{i}" for i in range(len(inputs))]
        node = helper.make_node(op_type, names, ["out"], **attributes)
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
        return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]

    return evaluate


def test_lrn_matches_onnx_for_odd_sizes(onnx_reference):
    # ONNX's reference loops its channel index over the batch dimension: keep the two equal.
    x = rand(6, 6, 3, 3)
    expected = onnx_reference("LRN", [x], size=3, alpha=0.02, beta=0.8, bias=1.2)
    np.testing.assert_allclose(run("nn.lrn", x, size=3, alpha=0.02, beta=0.8, bias=1.2), expected, rtol=1e-5)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_matches_onnx_and_inverts_space_to_depth(onnx_reference, mode):
    x = rand(2, 18, 2, 3)
    got = run("nn.depth_to_space", x, block_size=3, mode=mode)
    np.testing.assert_array_equal(got, onnx_reference("DepthToSpace", [x], blocksize=3, mode=mode))
    nhwc = run("nn.depth_to_space", np.transpose(x, (0, 2, 3, 1)), block_size=3, mode=mode, layout="NHWC")
    np.testing.assert_array_equal(np.transpose(nhwc, (0, 3, 1, 2)), got)
    if mode == "DCR":
        back = run("nn.space_to_depth", got, block_size=3)
        np.testing.assert_array_equal(back, x)
        np.testing.assert_array_equal(back, onnx_reference("SpaceToDepth", [got], blocksize=3))


def test_depth_to_space_crd_is_pixel_shuffle(F):
    x = rand(1, 12, 3, 2)
    np.testing.assert_array_equal(
        run("nn.depth_to_space", x, block_size=2, mode="CRD"), torch_of(F, F.pixel_shuffle, x, 2)
    )


@pytest.mark.parametrize("mode, numpy_mode", [("REFLECT", "reflect"), ("SYMMETRIC", "symmetric")])
def test_mirror_pad_is_numpy_reflect_or_symmetric(mode, numpy_mode):
    x = rand(3, 4, 5)
    widths = [(0, 1), (3 if mode == "REFLECT" else 4, 2), (2, 4)]
    got = run("nn.mirror_pad", x, pad_width=widths, mode=mode)
    np.testing.assert_array_equal(got, np.pad(x, widths, mode=numpy_mode))
    assert run("nn.mirror_pad", np.arange(3), pad_width=[[2, 1]], mode=mode).tolist() == (
        [2, 1, 0, 1, 2, 1] if mode == "REFLECT" else [1, 0, 0, 1, 2, 2]
    )
