"""The corpus's whole models on sensible random weights: the weights, the numpy reference, and every native backend.

Native builds run in a child process (`python -m transpile.testing.run_model`), so a backend that
crashes the interpreter fails its test rather than the session. ResNeXt-50 and GPT-2 builds are
marked `slow` (`make test-all` runs them); MNIST, MobileNet v2 and ResNet-50 (~10 s a build since
weights are data) run in CI.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from transpile import relay
from transpile.testing.models import MODELS, load_model, random_weights
from transpile.testing.numpy_reference import conv2d, pool2d, reference_evaluate, relative_error

SLOW = {"resnext50", "gpt2"}
# Relative to the output's largest magnitude: float32 kernels through ~50 layers, vs float64.
NATIVE_TOLERANCE = 1e-4
NATIVE_BACKENDS = ("cpp", "tir")


def _params(names, slow=SLOW):
    return [pytest.param(n, marks=pytest.mark.slow) if n in slow else n for n in names]


@functools.lru_cache(maxsize=2)
def _model(name):
    return load_model(name, seed=0)


@functools.lru_cache(maxsize=2)
def _reference(name):
    model = _model(name)
    return _flatten(reference_evaluate(model.module, *model.inputs(seed=1)))


def _flatten(value) -> list:
    return [a for v in value for a in _flatten(v)] if isinstance(value, tuple) else [value]


@pytest.fixture(autouse=True)
def _needs_corpus(corpus_dir):
    """Every test here reads the corpus (skipped without it)."""


# ----- the weights -------------------------------------------------------------------------------


def test_roles_come_from_where_each_constant_is_used():
    _, roles = random_weights("resnet50_v2")
    kinds = [r.kind for r in roles]
    assert kinds.count("conv_weight") == 53 and kinds.count("dense_weight") == 1
    assert all(kinds.count(k) == 51 for k in ("bn_gamma", "bn_beta", "bn_mean", "bn_var"))
    assert kinds[:4] == ["bn_gamma", "bn_beta", "bn_mean", "bn_var"]  # the input's batch norm
    assert roles[4].kind == "conv_weight" and roles[4].fan_in == 3 * 7 * 7
    # each of the 16 blocks damps its branch's last conv (plus the 4 projection shortcuts)
    assert sum(r.residual for r in roles) == 20
    _, mnist = random_weights("mnist")
    assert [r.kind for r in mnist] == ["conv_weight", "bias", "conv_weight", "bias", "dense_weight", "bias"]
    _, resnext = random_weights("resnext50")
    assert resnext[1].fan_in == (128 // 32) * 3 * 3  # grouped conv: fan-in per group


def test_weights_are_deterministic_and_batch_norm_variances_positive():
    first, roles = random_weights("mobilenet_v2", seed=0)
    again, _ = random_weights("mobilenet_v2", seed=0)
    other, _ = random_weights("mobilenet_v2", seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[0], other[0])
    variances = [w for w, r in zip(first, roles) if r.kind == "bn_var"]
    assert len(variances) == 53 and all((v > 0).all() for v in variances)
    conv = next(w for w, r in zip(first, roles) if r.kind == "conv_weight" and r.after_relu)
    fan_in = int(np.prod(conv.shape[1:]))
    assert abs(conv.std() / np.sqrt(2.0 / fan_in) - 1) < 0.2  # He-scaled


@pytest.mark.parametrize("name", _params(MODELS, slow={"gpt2"}))
def test_activations_stay_in_range_through_every_layer(name):
    model = _model(name)
    spreads = []

    def observe(call, value):
        if call.op.name in ("nn.conv2d", "nn.dense", "nn.batch_matmul") and isinstance(value, np.ndarray):
            assert np.isfinite(value).all(), f"{call.op.name} produced inf/NaN"
            spreads.append(float(value.std()))

    outputs = _flatten(reference_evaluate(model.module, *model.inputs(seed=1), dtype="float32", observe=observe))
    assert spreads and min(spreads) > 1e-2 and max(spreads) < 1e3, (min(spreads), max(spreads))
    first = outputs[0]
    assert np.isfinite(first).all() and 1e-2 < first.std() < 1e3


# ----- the reference -----------------------------------------------------------------------------


def _naive_conv2d(x, w, stride, pad, dilation, groups):
    """Six nested loops straight from the definition (tiny sizes only)."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for b in range(n):
        for oc in range(o):
            g = oc // (o // groups)
            for y in range(oh):
                for xx in range(ow):
                    for ic in range(cg):
                        for i in range(kh):
                            for j in range(kw):
                                out[b, oc, y, xx] += (
                                    x[b, g * cg + ic, y * stride + i * dilation, xx * stride + j * dilation]
                                    * w[oc, ic, i, j]
                                )
    return out


@pytest.mark.parametrize(
    "stride, pad, dilation, groups, channels",
    [(1, 0, 1, 1, 3), (2, 1, 1, 1, 3), (1, 2, 2, 1, 2), (2, 1, 1, 4, 4), (1, 1, 1, 2, 4)],
)
def test_reference_conv2d_follows_the_definition(stride, pad, dilation, groups, channels):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, channels, 7, 6))
    w = rng.standard_normal((4, channels // groups, 3, 3))
    got = conv2d(x, w, (stride, stride), (pad, pad, pad, pad), (dilation, dilation), groups)
    np.testing.assert_allclose(got, _naive_conv2d(x, w, stride, pad, dilation, groups), rtol=1e-12, atol=1e-12)


def test_reference_pooling_pads_max_with_minus_infinity_and_averages_inside():
    x = -np.arange(16.0).reshape(1, 1, 4, 4) - 1
    assert pool2d(x, "max", (3, 3), (2, 2), (1, 1, 1, 1))[0, 0, 0, 0] == -1
    assert pool2d(x, "avg", (2, 2), (2, 2), (1, 1, 1, 1))[0, 0, 0, 0] == -1  # only the one real element
    assert pool2d(x, "avg", (2, 2), (2, 2), (1, 1, 1, 1), count_include_pad=True)[0, 0, 0, 0] == -0.25


def test_reference_names_what_it_cannot_evaluate():
    mod = relay.parse('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) { erf(%x) }')
    with pytest.raises(NotImplementedError, match="no operator erf"):
        reference_evaluate(mod, np.zeros(2, "float32"))


@pytest.mark.parametrize("name", _params(MODELS, slow={"gpt2"}))
def test_reference_agrees_with_the_interpreter(name):
    model = _model(name)
    got = _flatten(relay.evaluate(model.module, *model.inputs(seed=1)))
    expected = _reference(name)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        assert relative_error(g, e) < 1e-5


# ----- native backends ---------------------------------------------------------------------------


def _run_in_child(name: str, backend: str, out_path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "transpile.testing.run_model", name, "--backend", backend, "--out", str(out_path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=3600, env=os.environ.copy())


@pytest.mark.parametrize("backend", NATIVE_BACKENDS)
@pytest.mark.parametrize("name", _params(["mnist", "mobilenet_v2", "resnet50_v2", "resnext50", "gpt2"]))
def test_model_on_native_backend_matches_the_reference(name, backend, tmp_path):
    proc = _run_in_child(name, backend, tmp_path / "out.npz")
    if proc.returncode != 0:
        pytest.fail(f"{name} on {backend} exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["model"] == MODELS[name]
    with np.load(tmp_path / "out.npz") as archive:
        got = [archive[f"out_{i}"] for i in range(len(archive.files))]
    expected = _reference(name)
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g.shape == e.shape and g.dtype == np.float32, (i, g.shape, g.dtype)
        error = relative_error(g, e)
        assert error < NATIVE_TOLERANCE, f"output {i}: max error {error:.2e} of the output's scale"
