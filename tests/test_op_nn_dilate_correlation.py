"""nn.dilate, nn.correlation and nn.upsampling3d: relations, numpy results against independent references
(numpy loops, torch), builders, the text format, and the interpreter, python and cpp backends."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.relay.op.registry import get
from transpile.relay.ty import Any

from op_support import T, rel, rel_error, run

rng = np.random.default_rng(9)




def test_relations():
    assert rel("nn.dilate", T((3, 4, 0), "int8"), strides=(2, 1, 3)) == T((5, 4, 0), "int8")
    assert rel("nn.dilate", T((Any(), 4)), strides=(2, 3)) == T((Any(), 10))
    assert rel("nn.correlation", T((2, 3, 10, 12)), T((2, 3, 10, 12)), kernel_size=3, max_displacement=2,
               stride2=2, padding=(2, 1)) == T((2, 9, 8, 8))  # fmt: skip
    assert rel("nn.correlation", T((Any(), 3, 9, 9)), T((1, 3, 9, 9)), max_displacement=1, stride1=2) == T((1, 9, 4, 4))
    assert rel("nn.upsampling3d", T((1, 2, 3, 4, 5)), scale_d=2.0, scale_h=1.5, scale_w=0.5) == T((1, 2, 6, 6, 2))
    assert rel("nn.upsampling3d", T((1, Any(), 3, 4, 2)), scale_d=2.0, scale_h=1.0, scale_w=1.0, layout="NDHWC") == T(
        (1, Any(), 3, 4, 2)
    )


@pytest.mark.parametrize(
    "name, args, attrs, message",
    [
        ("nn.dilate", [T((3, 4))], {"strides": (2,)}, "one entry per axis"),
        ("nn.dilate", [T((3, 4))], {"strides": (2, 0)}, "strides must be positive"),
        ("nn.correlation", [T((1, 3, 8, 8)), T((1, 2, 8, 8))], {}, "must have the type of data1"),
        ("nn.correlation", [T((1, 3, 8, 8), "int32"), T((1, 3, 8, 8), "int32")], {}, "4-D float tensor"),
        ("nn.correlation", [T((1, 3, 8, 8)), T((1, 3, 8, 8))], {"kernel_size": 2}, "positive odd number"),
        ("nn.correlation", [T((1, 3, 8, 8)), T((1, 3, 8, 8))], {"layout": "NHWC"}, "only layout NCHW"),
        ("nn.correlation", [T((1, 3, 8, 8)), T((1, 3, 8, 8))], {"padding": (1, 2, 3)}, "1, 2 or 4 sizes"),
        ("nn.correlation", [T((1, 3, 4, 8)), T((1, 3, 4, 8))], {"max_displacement": 2}, "padded height"),
        ("nn.upsampling3d", [T((1, 2, 3, 4))], {"scale_d": 2.0, "scale_h": 2.0, "scale_w": 2.0}, "must have rank 5"),
        ("nn.upsampling3d", [T((1, 2, 3, 4, 5))], {"scale_d": 1.0, "scale_h": 1.0, "scale_w": 1.0, "method": "cubic"},
         "nearest_neighbor or trilinear"),  # fmt: skip
        ("nn.upsampling3d", [T((1, 2, 3, 4, 5))], {"scale_d": 0.1, "scale_h": 1.0, "scale_w": 1.0}, "empty D"),
    ],
)
def test_relation_errors(name, args, attrs, message):
    assert message in rel_error(name, *args, **attrs)


# ---------------------------------------------------------------- references


def _dilate_reference(data, strides, value):
    out = np.full([(n - 1) * s + 1 if n else 0 for n, s in zip(data.shape, strides)], value, dtype=data.dtype)
    for index in np.ndindex(*data.shape):
        out[tuple(i * s for i, s in zip(index, strides))] = data[index]
    return out


def _correlation_reference(a, b, kernel_size, max_displacement, stride1, stride2, padding, is_multiply):
    """FlowNet's correlation, one output element at a time."""
    top, left, bottom, right = padding
    a, b = (np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right))) for x in (a, b))
    radius = max_displacement // stride2
    size = 2 * radius + 1
    border = max_displacement + kernel_size // 2
    out_h = -(-(a.shape[2] - 2 * border) // stride1)
    out_w = -(-(a.shape[3] - 2 * border) // stride1)
    out = np.zeros((a.shape[0], size * size, out_h, out_w))
    for n, q, i, j in np.ndindex(*out.shape):
        y1, x1 = i * stride1 + max_displacement, j * stride1 + max_displacement
        y2, x2 = y1 + (q // size - radius) * stride2, x1 + (q % size - radius) * stride2
        first = a[n, :, y1 : y1 + kernel_size, x1 : x1 + kernel_size]
        second = b[n, :, y2 : y2 + kernel_size, x2 : x2 + kernel_size]
        out[n, q, i, j] = (first * second if is_multiply else np.abs(first - second)).sum()
    return out / (kernel_size * kernel_size * a.shape[1])


@pytest.mark.parametrize("backend", ["interpreter", "python"])
def test_dilate_matches_a_loop(backend):
    data = rng.integers(-50, 50, (3, 2, 4)).astype("int16")
    x = relay.var("x", shape=data.shape, dtype="int16")
    got = run(relay.nn.dilate(x, (2, 1, 3), 7.9), [x], data, backend=backend)
    np.testing.assert_array_equal(got, _dilate_reference(data, (2, 1, 3), 7))  # 7.9 cast to int16: 7
    assert run(relay.nn.dilate(x, strides=(1, 1, 1)), [x], data, backend=backend).tolist() == data.tolist()


@pytest.mark.parametrize("backend", ["interpreter", "python"])
@pytest.mark.parametrize(
    "kernel_size, max_displacement, stride1, stride2, padding, is_multiply",
    [(1, 2, 1, 1, 0, True), (3, 2, 2, 2, (1, 2), False), (3, 1, 1, 1, (2, 1, 0, 3), True)],
)
def test_correlation_matches_a_loop(backend, kernel_size, max_displacement, stride1, stride2, padding, is_multiply):
    a, b = rng.normal(size=(2, 3, 7, 8)).astype("float32"), rng.normal(size=(2, 3, 7, 8)).astype("float32")
    x, y = relay.var("x", shape=a.shape), relay.var("y", shape=b.shape)
    call = relay.nn.correlation(x, y, kernel_size, max_displacement, stride1, stride2, padding, is_multiply, "NCHW")
    sides = {0: (0,) * 4, (1, 2): (1, 2, 1, 2)}.get(padding, padding)
    want = _correlation_reference(a, b, kernel_size, max_displacement, stride1, stride2, sides, is_multiply)
    np.testing.assert_allclose(run(call, [x, y], a, b, backend=backend), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["interpreter", "python"])
@pytest.mark.parametrize(
    "layout, method, mode, scales",
    [
        ("NCDHW", "nearest_neighbor", "asymmetric", (2.0, 3.0, 2.0)),
        ("NCDHW", "trilinear", "align_corners", (2.0, 1.5, 3.0)),
        ("NDHWC", "trilinear", "half_pixel", (1.0, 2.0, 2.0)),
    ],
)
def test_upsampling3d_matches_torch(backend, layout, method, mode, scales):
    torch = pytest.importorskip("torch")
    data = rng.normal(size=(1, 2, 3, 4, 2)).astype("float32")
    sizes = [int(round(n * s)) for n, s in zip(data.shape[2:], scales)]
    kwargs = {"align_corners": mode == "align_corners"} if method == "trilinear" else {}
    want = torch.nn.functional.interpolate(
        torch.tensor(data), size=sizes, mode="nearest" if method == "nearest_neighbor" else "trilinear", **kwargs
    ).numpy()
    if layout == "NDHWC":
        data, want = np.moveaxis(data, 1, -1).copy(), np.moveaxis(want, 1, -1)
    x = relay.var("x", shape=data.shape)
    call = relay.nn.upsampling3d(x, *scales, layout=layout, method=method, coordinate_transformation_mode=mode)
    np.testing.assert_allclose(run(call, [x], data, backend=backend), want, rtol=1e-5, atol=1e-6)


def test_builders_take_tvm_argument_order():
    x = relay.var("x", shape=(1, 2, 3, 4, 5))
    assert dict(relay.nn.upsampling3d(x).attrs) == {
        "scale_d": 1.0, "scale_h": 1.0, "scale_w": 1.0, "layout": "NCDHW", "method": "nearest_neighbor",
        "coordinate_transformation_mode": "half_pixel",
    }  # fmt: skip
    assert dict(relay.nn.dilate(x, [1, 1, 2, 1, 1]).attrs) == {"strides": (1, 1, 2, 1, 1), "dilation_value": 0.0}
    y = relay.var("y", shape=(1, 3, 8, 8))
    call = relay.nn.correlation(y, y, 3, 2, 1, 1, 1, False, "NCHW")
    assert call.attrs["padding"] == (1, 1) and call.attrs["is_multiply"] is False
    assert relay.op.nn.correlation is relay.nn.correlation


# ---------------------------------------------------------------- one program on every backend

PROGRAM = """#[version = "0.0.5"]
def @main(%a: Tensor[(1, 2, 6, 7), float32], %b: Tensor[(1, 2, 6, 7), float32], %v: Tensor[(1, 2, 2, 3, 2), float32],
          %i: Tensor[(2, 3), int32]) {
  %0 = nn.correlation(%a, %b, kernel_size=3, max_displacement=1, padding=[1, 1], is_multiply=False);
  %1 = nn.upsampling3d(%v, scale_d=2f, scale_h=1.5f, scale_w=2f, method="trilinear");
  (nn.relu(%0), %1, nn.dilate(%i, strides=[3, 2], dilation_value=-1f))
}
"""


def _inputs():
    return [rng.normal(size=(1, 2, 6, 7)).astype("float32"), rng.normal(size=(1, 2, 6, 7)).astype("float32"),
            rng.normal(size=(1, 2, 2, 3, 2)).astype("float32"), rng.integers(-9, 9, (2, 3)).astype("int32")]  # fmt: skip


@pytest.mark.parametrize("backend", ["python", "cpp"])
def test_program_agrees_with_the_interpreter(backend):
    mod = relay.parse(PROGRAM)
    inputs = _inputs()
    want = transpile.compile(mod, backend="interpreter")(*inputs)
    got = transpile.compile(mod, backend=backend)(*inputs)
    correlation = _correlation_reference(*inputs[:2], 3, 1, 1, 1, (1, 1, 1, 1), False)
    np.testing.assert_allclose(want[0], np.maximum(correlation, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(want[2], _dilate_reference(inputs[3], (3, 2), -1))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_program_text_round_trips():
    mod = relay.transform.InferType()(relay.parse(PROGRAM))
    assert mod["main"].checked_type.ret_type.fields[1] == T((1, 2, 4, 4, 4))
    assert relay.structural_equal(relay.transform.InferType()(relay.parse(mod.astext())), mod)
