"""image.resize1d/2d/3d, grid_sample, affine_grid: relations, builders, numpy vs ONNX's reference and PyTorch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from test_ops_nn_support import Any, T, infer, run
from transpile import relay
from transpile.errors import UnsupportedFeatureError
from transpile.relay.op import RelationError, registry

rng = np.random.default_rng(5)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- schemas, builders, text


def test_resize_schema_is_tvms_plus_the_scales_extension():
    opdef = registry.get("image.resize2d")
    assert opdef.attr_names == (
        "size",
        "roi",
        "layout",
        "method",
        "coordinate_transformation_mode",
        "rounding_method",
        "cubic_alpha",
        "cubic_exclude",
        "extrapolation_value",
        "out_dtype",
        "scales",
    )
    defaults = opdef.defaults()
    assert defaults["rounding_method"] == "round" and defaults["cubic_alpha"] == -0.5 and "size" not in defaults
    assert registry.get("image.resize3d").defaults()["layout"] == "NCDHW"
    assert registry.get("image.grid_sample").defaults() == {
        "method": "bilinear",
        "layout": "NCHW",
        "padding_mode": "zeros",
        "align_corners": True,
    }


def test_resize_builder_fills_the_python_defaults_and_reads_constant_sizes():
    x = relay.var("x", shape=(1, 3, 4, 5))
    call = relay.image.resize2d(x, (8, 10))
    assert call.attrs.roi == (0.0,) * 4 and call.attrs.rounding_method == "" and call.attrs.out_dtype == ""
    assert relay.image.resize2d(x, relay.const(np.array([6, 7], "int64"))).attrs.size == (6, 7)
    with pytest.raises(UnsupportedFeatureError, match="computed size"):
        relay.image.resize2d(x, relay.var("s", shape=(2,), dtype="int64"))
    grid = relay.image.affine_grid(relay.var("t", shape=(1, 2, 3)), (4, 5))
    assert grid.attrs.target_shape == (4, 5) and grid.attrs.align_corners is True


@pytest.mark.parametrize(
    "call",
    [
        'image.resize2d(%x, size=[8, 10], roi=[0f, 0f, 0f, 0f], method="cubic", cubic_exclude=1)',
        "image.resize2d(%x, size=[2, 3], roi=[0.1f, 0f, 0.9f, 1f], "
        'coordinate_transformation_mode="tf_crop_and_resize")',
        'image.resize2d(%x, size=[6, 7], method="nearest_neighbor", rounding_method="ceil", scales=[1.5f, 1.4f])',
        'image.grid_sample(%x, %g, method="bicubic", padding_mode="reflection", align_corners=False)',
    ],
)
def test_text_round_trip(call):
    source = (
        '#[version = "0.0.5"]\n'
        f"def @main(%x: Tensor[(1, 3, 4, 5), float32], %g: Tensor[(1, 2, 6, 2), float32]) {{ {call} }}"
    )
    mod = relay.transform.InferType()(relay.parse(source))
    assert relay.structural_equal(mod, relay.transform.InferType()(relay.parse(mod.astext())))


# ---------------------------------------------------------------- relations


@pytest.mark.parametrize(
    "op, args, given, expected",
    [
        ("image.resize2d", [T(1, 3, 4, 5)], dict(size=[8, 10]), T(1, 3, 8, 10)),
        (
            "image.resize2d",
            [T(1, 4, 5, 3)],
            dict(size=[2, 9], layout="NHWC", out_dtype="float16"),
            T(1, 2, 9, 3, dtype="float16"),
        ),
        ("image.resize2d", [T(Any(), 3, 4, 5)], dict(size=[1, 1]), T(Any(), 3, 1, 1)),
        ("image.resize1d", [T(2, 3, 7)], dict(size=[11]), T(2, 3, 11)),
        ("image.resize3d", [T(1, 2, 3, 4, 5)], dict(size=[6, 8, 10]), T(1, 2, 6, 8, 10)),
        ("image.resize3d", [T(1, 3, 4, 5, 2)], dict(size=[1, 2, 3], layout="NDHWC"), T(1, 1, 2, 3, 2)),
        ("image.grid_sample", [T(2, 3, 5, 6), T(2, 2, 7, 8)], {}, T(2, 3, 7, 8)),
        ("image.grid_sample", [T(2, 3, 4, 5, 6), T(2, 3, 1, 7, 8)], dict(layout="NCDHW"), T(2, 3, 1, 7, 8)),
        ("image.affine_grid", [T(4, 2, 3)], dict(target_shape=[5, 6]), T(4, 2, 5, 6)),
        ("image.affine_grid", [T(4, 3, 4)], dict(target_shape=[2, 5, 6]), T(4, 3, 2, 5, 6)),
    ],
)
def test_relations(op, args, given, expected):
    assert infer(op, args, **given) == expected


@pytest.mark.parametrize(
    "op, args, given, message",
    [
        ("image.resize2d", [T(1, 3, 4)], dict(size=[8, 10]), r"data must have rank 4 for layout NCHW"),
        ("image.resize2d", [T(1, 3, 4, 5)], dict(size=[8]), r"size must be 2 positive extent\(s\), got \[8\]"),
        ("image.resize2d", [T(1, 3, 4, 5)], dict(size=[8, 0]), r"size must be 2 positive"),
        (
            "image.resize2d",
            [T(1, 3, 4, 5)],
            dict(size=[8, 8], method="area"),
            r"method must be one of 'nearest_neighbor'",
        ),
        (
            "image.resize2d",
            [T(1, 3, 4, 5)],
            dict(size=[8, 8], coordinate_transformation_mode="edges"),
            r"coordinate_transformation_mode must be",
        ),
        ("image.resize2d", [T(1, 3, 4, 5)], dict(size=[8, 8], rounding_method="even"), r"rounding_method must be"),
        ("image.resize2d", [T(1, 3, 4, 5)], dict(size=[8, 8], roi=[0, 1]), r"roi must have 4 values"),
        ("image.resize2d", [T(1, 3, 4, 5)], dict(size=[8, 8], scales=[2.0, -1.0]), r"scales must be 2 positive"),
        ("image.resize1d", [T(1, 3, 4)], dict(size=[8], layout="NCH"), r"layout 'NCH' is not supported"),
        ("image.grid_sample", [T(2, 3, 5), T(2, 2, 7, 8)], {}, r"data must have rank 4 \(NCHW\) or 5"),
        ("image.grid_sample", [T(2, 3, 5, 6), T(2, 7, 8, 2)], {}, r"grid must have shape \(N=2, 2, out_H, out_W\)"),
        ("image.grid_sample", [T(2, 3, 5, 6), T(1, 2, 7, 8)], {}, r"grid must have shape"),
        ("image.grid_sample", [T(2, 3, 5, 6), T(2, 2, 7, 8, dtype="int32")], {}, r"grid must hold floats"),
        ("image.grid_sample", [T(2, 3, 5, 6), T(2, 2, 7, 8)], dict(method="linear"), r"method must be one of nearest"),
        ("image.grid_sample", [T(2, 3, 4, 5, 6), T(2, 3, 1, 7, 8)], {}, r"layout for rank-5 data 'NCHW'"),
        ("image.grid_sample", [T(2, 3, 5, 6), T(2, 2, 7, 8)], dict(padding_mode="edge"), r"padding_mode must be"),
        ("image.affine_grid", [T(4, 2, 3)], dict(target_shape=[5]), r"target_shape must have 2 \(H, W\) or 3"),
        ("image.affine_grid", [T(4, 3, 4)], dict(target_shape=[5, 6]), r"shape \(batch, 2, 3\) for a 2-D target_shape"),
        ("image.affine_grid", [T(4, 2, 3)], dict(target_shape=[5, 0]), r"target_shape must be positive"),
    ],
)
def test_relation_errors(op, args, given, message):
    with pytest.raises(RelationError, match=message):
        infer(op, args, **given)


# ---------------------------------------------------------------- resize against ONNX's reference


@pytest.fixture(scope="module")
def onnx_resize():
    pytest.importorskip("onnx")
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    def evaluate(x, sizes=None, scales=None, roi=None, **attributes):
        feeds = {"X": x, "roi": np.array(roi if roi is not None else [], np.float32)}
        feeds["scales"] = np.array(scales if scales is not None else [], np.float32)
        if sizes is not None:
            feeds["sizes"] = np.array(sizes, np.int64)
        node = helper.make_node("Resize", list(feeds), ["Y"], **attributes)
        inputs = [
            helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), None) for k, v in feeds.items()
        ]
        output = helper.make_tensor_value_info("Y", helper.np_dtype_to_tensor_dtype(x.dtype), None)
        model = helper.make_model(
            helper.make_graph([node], "g", inputs, [output]), opset_imports=[helper.make_opsetid("", 19)]
        )
        assert numpy_helper  # imported for its saturate_cast, used by the reference on integer outputs
        return ReferenceEvaluator(model).run(None, feeds)[0]

    return evaluate


_ONNX_MODE = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}
_COORDINATE_MODES = [
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_crop_and_resize",
    "half_pixel_symmetric",
]
_ROI = (0.2, -0.1, 0.9, 1.2)


def _resize_cases():
    for mode, coordinates, size in itertools.product(_ONNX_MODE, _COORDINATE_MODES, [(9, 4), (1, 13), (3, 3)]):
        roundings = (
            ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
            if mode == "nearest"
            else ["round_prefer_floor"]
        )
        for rounding, exclude in itertools.product(roundings, [0, 1] if mode == "cubic" else [0]):
            yield pytest.param(
                mode, coordinates, size, rounding, exclude, id=f"{mode}-{coordinates}-{size}-{rounding}-{exclude}"
            )


@pytest.mark.parametrize("mode, coordinates, size, rounding, exclude", list(_resize_cases()))
def test_resize2d_matches_onnx(onnx_resize, mode, coordinates, size, rounding, exclude):
    x = rand(1, 2, 5, 7)
    crop = coordinates == "tf_crop_and_resize"
    expected = onnx_resize(
        x,
        sizes=[1, 2, *size],
        roi=[0, 0, *_ROI[:2], 1, 1, *_ROI[2:]] if crop else None,
        mode=mode,
        coordinate_transformation_mode=coordinates,
        nearest_mode=rounding,
        cubic_coeff_a=-0.75,
        exclude_outside=exclude,
        extrapolation_value=-3.0,
    )
    got = run(
        "image.resize2d",
        x,
        size=size,
        roi=_ROI if crop else None,
        method=_ONNX_MODE[mode],
        coordinate_transformation_mode=coordinates,
        rounding_method=rounding,
        cubic_alpha=-0.75,
        cubic_exclude=exclude,
        extrapolation_value=-3.0,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# ONNX's reference finds a coordinate's taps after adding its padding width, which rounds a
# coordinate one ulp above an integer onto the integer and picks the pixel before it (e.g. 7 x 1.5
# with half_pixel_symmetric); these scales stay clear of that.
@pytest.mark.parametrize("scales", [(0.6, 1.7), (0.3, 0.25), (2.5, 0.9)])
@pytest.mark.parametrize("mode", list(_ONNX_MODE))
@pytest.mark.parametrize(
    "coordinates", ["half_pixel", "asymmetric", "pytorch_half_pixel", "half_pixel_symmetric", "align_corners"]
)
def test_resize_with_scales_matches_onnx(onnx_resize, scales, mode, coordinates):
    x = rand(1, 2, 5, 7)
    expected = onnx_resize(x, scales=[1, 1, *scales], mode=mode, coordinate_transformation_mode=coordinates)
    size = [int(np.floor(np.float32(s) * n)) for s, n in zip(scales, x.shape[2:])]
    got = run(
        "image.resize2d",
        x,
        size=size,
        scales=scales,
        method=_ONNX_MODE[mode],
        coordinate_transformation_mode=coordinates,
        rounding_method="round_prefer_floor",
        cubic_alpha=-0.75,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize1d_3d_and_integer_outputs_match_onnx(onnx_resize, mode):
    method = _ONNX_MODE[mode]
    x = rand(2, 3, 6)
    expected = onnx_resize(x, sizes=[2, 3, 13], mode=mode, coordinate_transformation_mode="align_corners")
    got = run(
        "image.resize1d",
        x,
        size=[13],
        method=method,
        coordinate_transformation_mode="align_corners",
        rounding_method="round_prefer_floor",
        cubic_alpha=-0.75,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    volume = rand(1, 2, 3, 4, 5)
    expected = onnx_resize(volume, sizes=[1, 2, 5, 3, 8], mode=mode, cubic_coeff_a=-0.5, exclude_outside=1)
    got = run(
        "image.resize3d", volume, size=[5, 3, 8], method=method, rounding_method="round_prefer_floor", cubic_exclude=1
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # uint8: cubic overshoot saturates, halves round to even.
    image = rng.integers(0, 256, (1, 1, 4, 5)).astype(np.uint8)
    expected = onnx_resize(image, sizes=[1, 1, 7, 9], mode=mode, cubic_coeff_a=-0.75)
    got = run(
        "image.resize2d", image, size=[7, 9], method=method, rounding_method="round_prefer_floor", cubic_alpha=-0.75
    )
    np.testing.assert_array_equal(got, expected)


def test_tvm_rounding_defaults():
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
    # "" rounds with align_corners (half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2) ...
    aligned = run(
        "image.resize1d",
        x,
        size=[7],
        method="nearest_neighbor",
        coordinate_transformation_mode="align_corners",
        rounding_method="",
    )
    assert aligned.ravel().tolist() == [0, 0, 1, 2, 2, 2, 3]
    # ... and floors otherwise.
    floored = run(
        "image.resize1d",
        x,
        size=[6],
        method="nearest_neighbor",
        coordinate_transformation_mode="half_pixel",
        rounding_method="",
    )
    assert floored.ravel().tolist() == [0, 0, 1, 1, 2, 3]


@pytest.fixture(scope="module")
def F():
    pytest.importorskip("torch")
    import torch.nn.functional

    return torch.nn.functional


def _torch(function, *arrays, **kwargs):
    import torch

    return function(*[torch.from_numpy(a) for a in arrays], **kwargs).numpy()


@pytest.mark.parametrize(
    "torch_mode, align_corners, given",
    [
        ("bilinear", False, dict(method="linear")),
        ("bilinear", True, dict(method="linear", coordinate_transformation_mode="align_corners")),
        ("bicubic", False, dict(method="cubic", cubic_alpha=-0.75)),
        ("bicubic", True, dict(method="cubic", cubic_alpha=-0.75, coordinate_transformation_mode="align_corners")),
        (
            "nearest",
            None,
            dict(method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor"),
        ),
        (
            "nearest-exact",
            None,
            dict(
                method="nearest_neighbor",
                coordinate_transformation_mode="tf_half_pixel_for_nn",
                rounding_method="floor",
            ),
        ),
    ],
)
def test_resize2d_matches_torch_interpolate(F, torch_mode, align_corners, given):
    x = rand(2, 3, 5, 7)
    for size in [(9, 4), (10, 14), (3, 3)]:
        expected = _torch(F.interpolate, x, size=size, mode=torch_mode, align_corners=align_corners)
        np.testing.assert_allclose(run("image.resize2d", x, size=size, **given), expected, rtol=1e-5, atol=1e-5)


def test_resize1d_and_3d_match_torch_interpolate(F):
    x = rand(2, 3, 6)
    np.testing.assert_allclose(
        run("image.resize1d", x, size=[11]), _torch(F.interpolate, x, size=11, mode="linear"), rtol=1e-5, atol=1e-6
    )
    volume = rand(1, 2, 3, 4, 5)
    expected = _torch(F.interpolate, volume, size=(6, 3, 7), mode="trilinear")
    np.testing.assert_allclose(run("image.resize3d", volume, size=[6, 3, 7]), expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- grid_sample and affine_grid


@pytest.fixture(scope="module")
def onnx_grid_sample():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    def evaluate(x, grid_last, **attributes):
        node = helper.make_node("GridSample", ["X", "G"], ["Y"], **attributes)
        inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("X", "G")]
        output = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
        model = helper.make_model(
            helper.make_graph([node], "g", inputs, [output]), opset_imports=[helper.make_opsetid("", 20)]
        )
        return ReferenceEvaluator(model).run(None, {"X": x, "G": grid_last})[0]

    return evaluate


def _grid(batch, nd, *shape):
    grid = rng.uniform(-1.6, 1.6, (batch, nd) + shape).astype(np.float32)
    grid.reshape(-1)[:6] = [-1.0, 1.0, 0.0, 0.5, -0.25, 1.5]  # corners, centre and exact halves
    return grid


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize(
    "method, padding_mode, align_corners",
    list(itertools.product(["nearest", "bilinear", "bicubic"], ["zeros", "border", "reflection"], [True, False])),
)
def test_grid_sample_matches_onnx(onnx_grid_sample, nd, method, padding_mode, align_corners):
    x = rand(2, 3, 4, 5, 6) if nd == 3 else rand(2, 3, 5, 6)
    grid = _grid(2, nd, *((3, 4, 2) if nd == 3 else (4, 7)))
    expected = onnx_grid_sample(
        x,
        np.moveaxis(grid, 1, -1).copy(),
        mode={"bilinear": "linear", "bicubic": "cubic"}.get(method, method),
        padding_mode=padding_mode,
        align_corners=int(align_corners),
    )
    layout = "NCDHW" if nd == 3 else "NCHW"
    got = run(
        "image.grid_sample",
        x,
        grid,
        method=method,
        padding_mode=padding_mode,
        align_corners=align_corners,
        layout=layout,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "method, padding_mode",
    [
        (m, p)
        for m in ("nearest", "bilinear", "bicubic")
        for p in ("zeros", "border", "reflection")
        if (m, p) != ("bicubic", "border")
    ],
)
@pytest.mark.parametrize("align_corners", [True, False])
def test_grid_sample_matches_torch(F, method, padding_mode, align_corners):
    # (bicubic with border padding: ONNX clamps the coordinate beyond the pixel edges, PyTorch only the taps)
    x, grid = rand(2, 3, 5, 6), _grid(2, 2, 4, 7)
    expected = _torch(
        F.grid_sample,
        x,
        np.moveaxis(grid, 1, -1).copy(),
        mode=method,
        padding_mode=padding_mode,
        align_corners=align_corners,
    )
    got = run("image.grid_sample", x, grid, method=method, padding_mode=padding_mode, align_corners=align_corners)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_grid_sample_in_nhwc_and_with_one_pixel_and_reflection():
    x, grid = rand(1, 2, 4, 5), _grid(1, 2, 3, 3)
    nchw = run("image.grid_sample", x, grid, padding_mode="reflection")
    nhwc = run("image.grid_sample", np.moveaxis(x, 1, -1), grid, padding_mode="reflection", layout="NHWC")
    np.testing.assert_allclose(np.moveaxis(nhwc, -1, 1), nchw, rtol=1e-6)
    single = rand(1, 1, 1, 1)
    out = run("image.grid_sample", single, grid, padding_mode="reflection", method="bicubic")
    np.testing.assert_allclose(out, np.broadcast_to(single, out.shape), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Since version 1.3.0, affine_grid")  # size-1 axes: torch (and we) put them at 0
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("target", [(4, 5), (3, 4, 5), (1, 6)])
def test_affine_grid_matches_torch(F, align_corners, target):
    nd = len(target)
    theta = rand(2, nd, nd + 1)
    got = run("image.affine_grid", theta, target_shape=target, align_corners=align_corners)
    expected = _torch(F.affine_grid, theta, size=(2, 1, *target), align_corners=align_corners)
    np.testing.assert_allclose(np.moveaxis(got, 1, -1), expected, rtol=1e-5, atol=1e-6)


# A bicubic grid_sample kernel spends ~150 s in TVM's simplifier (a known build-time problem, see
# the issue-12 note): `make test-all` runs it, the quick suite the other two.
_SLOW_BICUBIC = pytest.mark.slow


@pytest.mark.parametrize(
    "method, padding_mode",
    [("nearest", "zeros"), ("bilinear", "border"), pytest.param("bicubic", "reflection", marks=_SLOW_BICUBIC)],
)
def test_grid_sample_of_a_nan_coordinate_samples_nothing(method, padding_mode):
    import transpile

    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%d: Tensor[(1, 1, 3, 3), float32], %g: Tensor[(1, 2, 1, 2), float32]) {\n"
        f'  image.grid_sample(%d, %g, method="{method}", padding_mode="{padding_mode}")\n'
        "}\n"
    )
    data = np.arange(1, 10, dtype="float32").reshape(1, 1, 3, 3)
    grid = np.array([[[[np.nan, 0.2]], [[0.1, np.nan]]]], "float32")  # (x, y) = (nan, 0.1), (0.2, nan)
    expected = relay.evaluate(mod, data, grid)
    np.testing.assert_array_equal(expected, np.zeros((1, 1, 1, 2), "float32"))  # PyTorch's grid_sampler
    np.testing.assert_array_equal(transpile.compile(mod, backend="cpp")(data, grid), expected)
