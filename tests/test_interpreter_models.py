"""Whole real models from the corpus (MNIST, MobileNet v2) run by the interpreter, checked against numpy."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from transpile import EvaluationError, relay
from transpile.relay import evaluate
from transpile.relay.deep import run_deep


def _load(corpus_dir, name, make_constant):
    meta = json.loads((corpus_dir / f"{name}.meta.json").read_text())
    entries = meta["tables"]["relay.Constant"]
    constants = [relay.Constant(make_constant(e["index"], tuple(e["shape"]), e["dtype"])) for e in entries]
    text = (corpus_dir / f"{name}.relay").read_text()
    return relay.parse(text, source_name=name, init_meta_table={"relay.Constant": constants}), constants


# ----- independent numpy versions of the operators the models use --------------------------------


def conv2d(x, w, strides=(1, 1), padding=(0, 0, 0, 0), groups=1):
    """NCHW / OIHW convolution by sliding windows and einsum."""
    top, left, bottom, right = padding
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    out_channels, in_per_group, kh, kw = w.shape
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, :: strides[0], :: strides[1]]
    n, c, oh, ow = windows.shape[:4]
    windows = windows.reshape(n, groups, c // groups, oh, ow, kh, kw)
    weights = w.reshape(groups, out_channels // groups, in_per_group, kh, kw)
    out = np.einsum("ngchwij,gocij->ngohw", windows, weights, optimize=True)
    return out.reshape(n, out_channels, oh, ow)


def max_pool(x, size):
    """Max pooling with window == stride and no padding (trailing rows/columns dropped)."""
    n, c, h, w = x.shape
    oh, ow = h // size, w // size
    return x[:, :, : oh * size, : ow * size].reshape(n, c, oh, size, ow, size).max(axis=(3, 5))


# ----- MNIST -------------------------------------------------------------------------------------


def mnist_reference(x, k):
    """The MNIST network of menangerie__1, written out layer by layer."""
    y = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))
    y = np.maximum(conv2d(y, k[0]) + k[1], 0)
    y = max_pool(y, 2)
    y = np.pad(y, ((0, 0), (0, 0), (2, 2), (2, 2)))
    y = np.maximum(conv2d(y, k[2]) + k[3], 0)
    y = max_pool(y, 3)
    y = y.reshape(1, 256)
    return y @ k[4].T + k[5]


def test_mnist_matches_numpy(corpus_dir):
    rng = np.random.default_rng(0)

    def make(index, shape, dtype):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(dtype)

    mod, constants = _load(corpus_dir, "menangerie__1", make)
    kernels = [c.data for c in constants]
    for seed in (1, 2):
        image = np.random.default_rng(seed).standard_normal((1, 1, 28, 28)).astype("float32")
        start = time.perf_counter()
        out = evaluate(mod, image)
        elapsed = time.perf_counter() - start
        expected = mnist_reference(image.astype("float64"), [k.astype("float64") for k in kernels])
        assert out.shape == (1, 10) and out.dtype == np.float32
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
        assert elapsed < 5


# ----- MobileNet v2 ------------------------------------------------------------------------------


def mobilenet_reference(mod, image):
    """Walks the model's graph computing each node with the numpy versions above (float64)."""
    values = {}
    main = mod["main"]
    values[id(main.params[0])] = image.astype("float64")

    def value_of(expr):
        key = id(expr)
        if key in values:
            return values[key]
        if isinstance(expr, relay.Constant):
            result = expr.data.astype("float64")
        elif isinstance(expr, relay.TupleGetItem):
            result = value_of(expr.tuple_value)[expr.index]
        else:
            assert isinstance(expr, relay.Call), type(expr)
            args = [value_of(a) for a in expr.args]
            attrs = expr.attrs
            name = expr.op.name
            if name == "nn.conv2d":
                result = conv2d(args[0], args[1], attrs.strides, attrs.padding, attrs.groups)
            elif name == "nn.batch_norm":
                x, gamma, beta, mean, var = args
                shape = (1, -1, 1, 1)
                scale = gamma.reshape(shape) / np.sqrt(var.reshape(shape) + attrs.epsilon)
                result = ((x - mean.reshape(shape)) * scale + beta.reshape(shape), mean, var)
            elif name == "nn.relu":
                result = np.maximum(args[0], 0)
            elif name == "add":
                result = args[0] + args[1]
            elif name == "nn.global_avg_pool2d":
                result = args[0].mean(axis=(2, 3), keepdims=True)
            elif name == "reshape":
                assert tuple(attrs.newshape) == (0, -1)
                result = args[0].reshape(args[0].shape[0], -1)
            else:
                raise AssertionError(f"unexpected operator {name}")
        values[key] = result
        return result

    return run_deep(value_of, main.body)


def test_mobilenet_v2_matches_numpy(corpus_dir):
    rng = np.random.default_rng(0)

    # Weights scaled by fan-in and batch-norm statistics near 1 keep activations in range
    # through the 54 convolutions.
    def make(index, shape, dtype):
        if len(shape) == 1:
            return rng.uniform(0.5, 1.5, shape).astype(dtype)
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(dtype)

    mod, _ = _load(corpus_dir, "menangerie__9", make)
    image = np.random.default_rng(3).standard_normal((1, 3, 224, 224)).astype("float32")
    start = time.perf_counter()
    out = evaluate(mod, image)
    elapsed = time.perf_counter() - start
    assert out.shape == (1, 1000) and out.dtype == np.float32
    assert np.isfinite(out).all()
    assert elapsed < 30
    expected = mobilenet_reference(mod, image)
    assert expected.shape == (1, 1000)
    np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())


def test_mobilenet_v2_wrong_input_shape_is_rejected_before_running(corpus_dir):
    mod, _ = _load(corpus_dir, "menangerie__9", lambda i, s, d: np.ones(s, dtype=d))
    with pytest.raises(EvaluationError) as info:
        evaluate(mod, np.zeros((1, 3, 32, 32), dtype="float32"))
    assert "argument 1 (%data) of @main: expected Tensor[(1, 3, 224, 224), float32]" in str(info.value)
