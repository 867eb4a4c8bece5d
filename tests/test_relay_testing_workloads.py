"""relay.testing's model workloads (resnet, mobilenet, dqn, dcgan, lstm, …): types, parameters, text, numerics."""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import TranspileError
from transpile.relay.testing import (
    create_workload,
    dcgan,
    densenet,
    dqn,
    inception_v3,
    layers,
    lstm,
    mobilenet,
    resnet,
    resnet_3d,
    squeezenet,
    synthetic,
    vgg,
)
from transpile.relay.testing.init import Xavier
from transpile.tvm_compat.ir import assert_structural_equal

# Xavier scaled for relu networks (fan-in, magnitude 6 = He): TVM's default init shrinks deep nets' activations
# ~50× per MobileNet block, which would leave a uniform softmax and make output comparisons vacuous.
HE_INIT = Xavier(factor_type="in", magnitude=6)

# name → (builder, expected output shape, parameter names that must be present with their shapes)
WORKLOADS = {
    "resnet18_nchw": (
        lambda: resnet.get_workload(batch_size=2, num_classes=10, num_layers=18, image_shape=(3, 32, 32)),
        (2, 10),
        {"conv0_weight": (64, 3, 3, 3), "stage2_unit1_sc_weight": (128, 64, 1, 1), "fc1_weight": (10, 512)},
    ),
    "resnet50_nhwc": (
        lambda: resnet.get_workload(num_classes=10, num_layers=50, image_shape=(64, 64, 3), layout="NHWC"),
        (1, 10),
        {"conv0_weight": (7, 7, 3, 64), "bn0_gamma": (64,), "stage4_unit3_conv3_weight": (1, 1, 512, 2048)},
    ),
    "resnet20_cifar": (
        lambda: resnet.get_workload(num_classes=10, num_layers=20, image_shape=(3, 28, 28)),
        (1, 10),
        {"stage3_unit3_conv2_weight": (64, 64, 3, 3), "bn_data_moving_var": (3,)},
    ),
    "resnet3d_18": (
        lambda: resnet_3d.get_workload(num_classes=5, num_layers=8, image_shape=(3, 4, 16, 16)),
        (1, 5),
        {"conv0_weight": (16, 3, 3, 3, 3), "fc1_bias": (5,)},
    ),
    "mobilenet_nchw": (
        lambda: mobilenet.get_workload(num_classes=10, image_shape=(3, 32, 32)),
        (1, 10),
        {"separable_conv_block_1_weight": (32, 1, 3, 3), "separable_conv_block_13_conv2_weight": (1024, 1024, 1, 1)},
    ),
    "mobilenet_nhwc": (
        lambda: mobilenet.get_workload(num_classes=10, image_shape=(32, 32, 3), layout="NHWC"),
        (1, 10),
        {"separable_conv_block_1_weight": (3, 3, 32, 1), "conv_block_1_bn_gamma": (32,), "fc_weight": (10, 1024)},
    ),
    "dqn": (
        lambda: dqn.get_workload(batch_size=1),
        (1, 18),
        {"conv1_weight": (32, 4, 8, 8), "conv3_bias": (64,), "dense1_weight": (512, 3136)},
    ),
    "dcgan": (
        lambda: dcgan.get_workload(batch_size=1, ngf=16),
        (1, 3, 64, 64),
        {"dense_weight": (2048, 100), "g2_deconv_weight": (128, 64, 4, 4), "g5_deconv_weight": (16, 3, 4, 4)},
    ),
    "squeezenet_1.0": (
        lambda: squeezenet.get_workload(num_classes=10, version="1.0", image_shape=(3, 96, 96)),
        (1, 10),
        {"conv1_weight": (96, 3, 7, 7), "fire8_right_conv_weight": (256, 64, 3, 3)},
    ),
    "squeezenet_1.1": (
        lambda: squeezenet.get_workload(num_classes=10, version="1.1", image_shape=(3, 64, 64)),
        (1, 10),
        {"conv1_weight": (64, 3, 3, 3), "conv_final_bias": (10,)},
    ),
    "inception_v3": (
        lambda: inception_v3.get_workload(num_classes=10),
        (1, 10),
        {"mixed_10_tower_1_mixed_conv_1_conv1_weight": (384, 384, 3, 1), "fc2_bias": (10,)},
    ),
    "densenet121": (
        lambda: densenet.get_workload(classes=10, batch_size=1),
        (1, 10),
        {"conv2d_2_3_15_weight": (32, 128, 3, 3), "conv_t_2_weight": (512, 768, 1, 1), "dense_weight": (10, 512)},
    ),
    "lstm": (
        lambda: lstm.get_workload(3, 4, batch_size=2),
        (2, 4),
        {"i2h_0_weight": (16, 4), "h2h_2_bias": (16,)},
    ),
    "synthetic": (
        lambda: synthetic.get_workload(),
        (1, 3, 24, 12),
        {"dense_weight": (12, 12), "conv2_weight": (3, 3, 3, 3), "batch_norm_moving_mean": (3,)},
    ),
    "vgg11_bn": (
        lambda: vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32), batch_norm=True),
        (1, 10),
        {"conv5_2_weight": (512, 512, 3, 3), "bn1_1_gamma": (64,), "fc6_weight": (4096, 512)},
    ),
}


def _shape(ty):
    return tuple(int(d) for d in ty.shape)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_types_params_and_text_round_trip(name):
    build, output_shape, expected_params = WORKLOADS[name]
    mod, params = build()
    main = mod["main"]
    assert _shape(main.checked_type.ret_type) == output_shape
    # every parameter but the inputs has an initial value of its inferred type
    for param in main.params:
        if param.name_hint == "data":
            continue
        value = params[param.name_hint]
        assert value.shape == _shape(param.checked_type) and value.dtype == param.checked_type.dtype
        assert np.isfinite(value).all()
    assert len(params) == len({p.name_hint for p in main.params if p.name_hint != "data"})
    for key, shape in expected_params.items():
        assert params[key].shape == shape, key
    # TVM's printer tests: text → parser → the same module
    assert_structural_equal(relay.fromtext(mod.astext()), mod, map_free_vars=True)


def test_parameters_are_initialized_by_role():
    _, params = resnet.get_workload(num_classes=10, image_shape=(3, 32, 32))
    assert np.all(params["bn_data_gamma"].numpy() == 1) and np.all(params["bn1_moving_mean"].numpy() == 0)
    assert np.all(params["fc1_bias"].numpy() == 0) and np.all(params["stage1_unit1_bn1_moving_var"].numpy() == 1)
    weight = params["stage1_unit1_conv1_weight"].numpy()
    bound = np.sqrt(3 / ((64 + 64) * 9 / 2))  # Xavier avg for a 64→64 3×3 convolution
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.9 * bound
    _, again = resnet.get_workload(num_classes=10, image_shape=(3, 32, 32))
    np.testing.assert_array_equal(again["stage1_unit1_conv1_weight"].numpy(), weight)  # seeded
    _, constant = synthetic.get_workload()
    np.testing.assert_allclose(constant["dense_weight"].numpy(), np.full((12, 12), 1 / 144, "float32"))


def test_get_net_is_the_workloads_function():
    net = dqn.get_net(1, num_actions=4, image_shape=(4, 36, 36))
    assert isinstance(net, relay.Function) and [p.name_hint for p in net.params][:2] == ["data", "conv1_weight"]
    mod, _ = dqn.get_workload(1, num_actions=4, image_shape=(4, 36, 36))
    assert_structural_equal(mod["main"], relay.testing.run_infer_type(net), map_free_vars=True)


def test_layers_name_their_parameters():
    data = relay.var("data", shape=(1, 8), dtype="float32")
    out = layers.dense_add_bias(data, units=4, name="fc")
    func = relay.testing.run_infer_type(relay.Function(relay.analysis.free_vars(out), out))
    assert [(p.name_hint, _shape(p.checked_type)) for p in func.params] == [
        ("data", (1, 8)),
        ("fc_weight", (4, 8)),
        ("fc_bias", (4,)),
    ]
    image = relay.var("data", shape=(1, 4, 6, 6), dtype="float32")
    normalized = layers.batch_norm_infer(layers.conv2d(image, channels=2, kernel_size=(3, 3), name="c"), name="bn")
    names = [p.name_hint for p in relay.analysis.free_vars(normalized)]
    assert names == ["data", "c_weight", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    assert layers.conv_kernel_layout("NHWC") == "HWIO" and layers.conv_kernel_layout("NHWC", True) == "HWOI"


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: resnet.get_net(1, 10, num_layers=19), "no network of 19 layers"),
        (lambda: resnet.get_net(1, 10, num_layers=18, image_shape=(3, 28, 28)), r"6n\+2"),
        (lambda: resnet.get_net(1, 10, layout="NCWH"), "layout must be NCHW or NHWC"),
        (lambda: resnet_3d.get_net(1, 10, layout="NCHW"), "layout must be NCDHW or NDHWC"),
        (lambda: mobilenet.get_workload(layout="CHWN"), "layout must be NCHW or NHWC"),
        (lambda: squeezenet.get_net(1, (3, 64, 64), 10, "2.0", "float32"), "unsupported version '2.0'"),
        (lambda: densenet.get_workload(densenet_size=100), "no network of size 100"),
        (lambda: vgg.get_net(1, (3, 32, 32), 10, "float32", num_layers=12), "invalid num_layers 12"),
        (lambda: dcgan.get_net(1, oshape=(3, 32, 32)), "only 64×64"),
        (lambda: lstm.get_net(0, 4), "iterations must be at least 1"),
        (lambda: layers.conv2d(relay.var("x"), channels=1, kernel_size=(1, 1)), "needs name="),
        (lambda: layers.conv_kernel_layout("NCDHW"), "unknown data layout"),
    ],
)
def test_unsupported_configurations_are_named(build, message):
    with pytest.raises(TranspileError, match=message):
        build()


def _run(mod, params, *inputs, backend="interpreter"):
    compiled = transpile.compile(mod, backend=backend, params={k: np.asarray(v) for k, v in params.items()})
    return np.asarray(compiled(*inputs))


def _input(mod, seed=0):
    (data,) = [p for p in mod["main"].params if p.name_hint == "data"]
    return np.random.default_rng(seed).uniform(-1, 1, size=_shape(data.checked_type)).astype("float32")


def _conv2d(data, weight, stride=1, padding=0, groups=1):
    """NCHW × OIHW convolution in numpy: the reference the networks' convolutions are checked against."""
    data = np.pad(data, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    kernel_h, kernel_w = weight.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(data, (kernel_h, kernel_w), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride]  # N, C, H', W', kh, kw
    per_group_in, per_group_out = data.shape[1] // groups, weight.shape[0] // groups
    outputs = [
        np.einsum(
            "nchwij,ocij->nohw",
            windows[:, g * per_group_in : (g + 1) * per_group_in],
            weight[g * per_group_out : (g + 1) * per_group_out],
        )
        for g in range(groups)
    ]
    return np.concatenate(outputs, axis=1)


def _relu(x):
    return np.maximum(x, 0)


def test_dqn_matches_an_independent_reference():
    mod, params = dqn.get_workload(2, num_actions=5, image_shape=(4, 36, 36))
    data = _input(mod)
    p = {k: v.numpy() for k, v in params.items()}
    hidden = data
    for name, stride in (("conv1", 4), ("conv2", 2), ("conv3", 1)):
        hidden = _relu(_conv2d(hidden, p[name + "_weight"], stride) + p[name + "_bias"][:, None, None])
    hidden = _relu(hidden.reshape(2, -1) @ p["dense1_weight"].T + p["dense1_bias"])
    expected = hidden @ p["dense2_weight"].T + p["dense2_bias"]
    np.testing.assert_allclose(_run(mod, params, data), expected, rtol=1e-4, atol=1e-6)


def test_mobilenet_matches_an_independent_reference():
    mod, params = create_workload(mobilenet.mobile_net(num_classes=10, data_shape=(1, 3, 32, 32)), HE_INIT)
    data = _input(mod)
    p = {k: v.numpy() for k, v in params.items()}

    def bn_relu(x, name):
        scale = p[name + "_gamma"] / np.sqrt(p[name + "_moving_var"] + 1e-5)
        shift = p[name + "_beta"] - p[name + "_moving_mean"] * scale
        return _relu(x * scale[:, None, None] + shift[:, None, None])

    hidden = bn_relu(_conv2d(data, p["conv_block_1_conv_weight"], 2, 1), "conv_block_1_bn")
    downsampling = {2, 4, 6, 12}
    for index in range(1, 14):
        name = f"separable_conv_block_{index}"
        stride = 2 if index in downsampling else 1
        hidden = _conv2d(hidden, p[name + "_weight"], stride, 1, groups=hidden.shape[1])
        hidden = bn_relu(_conv2d(bn_relu(hidden, name + "_bn1"), p[name + "_conv2_weight"]), name + "_bn2")
    logits = hidden.mean(axis=(2, 3)) @ p["fc_weight"].T + p["fc_bias"]
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert expected.std() > 1e-3  # the comparison sees the weights, not a uniform softmax
    np.testing.assert_allclose(_run(mod, params, data), expected, rtol=1e-4, atol=1e-6)


def _to_hwio(name, weight):
    # depthwise kernels (one input channel per group) go to HWOI, the others to HWIO
    return weight.transpose(2, 3, 0, 1) if weight.shape[1] == 1 else weight.transpose(2, 3, 1, 0)


@pytest.mark.parametrize(
    "build",
    [
        lambda layout, shape: resnet.get_net(1, 10, 20, shape, layout),
        lambda layout, shape: mobilenet.mobile_net(10, (1,) + shape, layout=layout),
    ],
    ids=["resnet20", "mobilenet"],
)
def test_nhwc_network_computes_what_the_nchw_one_does(build):
    nchw_mod, nchw_params = create_workload(build("NCHW", (3, 28, 28)), HE_INIT)
    nhwc_mod, _ = create_workload(build("NHWC", (28, 28, 3)))
    nhwc_params = {
        name: _to_hwio(name, value.numpy()) if value.ndim == 4 else value.numpy() for name, value in nchw_params.items()
    }
    data = _input(nchw_mod)
    expected = _run(nchw_mod, nchw_params, data)
    assert expected.std() > 1e-4  # class probabilities differ by far more than the tolerance
    actual = _run(nhwc_mod, nhwc_params, data.transpose(0, 2, 3, 1))
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-7)


def test_lstm_matches_an_independent_reference():
    iterations, hidden_size, batch = 3, 4, 2
    mod, params = lstm.get_workload(iterations, hidden_size, batch_size=batch)
    # nonzero biases, so that their wiring is checked too
    params = {k: v.numpy() + np.float32(0.1 if k.endswith("bias") else 0.0) for k, v in params.items()}
    steps = [np.random.default_rng(seed).uniform(-1, 1, (batch, hidden_size)).astype("float32") for seed in range(3)]

    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    h = c = np.zeros((batch, hidden_size), "float32")
    for step, x in enumerate(steps):
        gates = x @ params[f"i2h_{step}_weight"].T + params[f"i2h_{step}_bias"]
        gates = gates + h @ params[f"h2h_{step}_weight"].T + params[f"h2h_{step}_bias"]
        in_gate, forget_gate, transform, out_gate = np.split(gates, 4, axis=1)
        c = sigmoid(forget_gate) * c + sigmoid(in_gate) * np.tanh(transform)
        h = sigmoid(out_gate) * np.tanh(c)
    # every step reads its own input variable named `data`, in order
    np.testing.assert_allclose(_run(mod, params, *steps), h, rtol=1e-5, atol=1e-6)


SMALL_RUNS = {
    "resnet18": lambda: create_workload(resnet.get_net(1, 10, 18, (3, 32, 32)), HE_INIT),
    "mobilenet": lambda: create_workload(mobilenet.mobile_net(num_classes=10, data_shape=(1, 3, 32, 32)), HE_INIT),
    "dqn": lambda: dqn.get_workload(1, num_actions=4, image_shape=(4, 36, 36)),
    "dcgan": lambda: dcgan.get_workload(1, ngf=8, random_len=16),
    "squeezenet": lambda: create_workload(squeezenet.get_net(1, (3, 48, 48), 10, "1.1", "float32"), HE_INIT),
    "synthetic": lambda: synthetic.get_workload(),
}


@pytest.mark.slow  # a fresh cpp build of a whole network takes 30-110 s
@pytest.mark.parametrize("name", sorted(SMALL_RUNS))
def test_cpp_backend_agrees_with_the_interpreter(name):
    mod, params = SMALL_RUNS[name]()
    data = _input(mod)
    expected = _run(mod, params, data)
    np.testing.assert_allclose(_run(mod, params, data, backend="cpp"), expected, rtol=1e-4, atol=1e-6)
