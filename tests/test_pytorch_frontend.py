"""The PyTorch importer, op family by op family: small modules through torch.export, compared with PyTorch itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import transpile  # noqa: E402
from transpile.relay.frontend import (  # noqa: E402
    FrontendError,
    UnsupportedOperatorsError,
    from_exported_program,
    from_pytorch,
)
from transpile.relay.op.registry import lookup  # noqa: E402

nn = torch.nn
F = torch.nn.functional

RTOL, ATOL = 1e-4, 1e-5

# torch's own pytree code warns about its deprecated LeafSpec on every export.
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")


class Lambda(nn.Module):
    """A module whose forward is `fn` (the graph torch.export traces)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _module(fn_or_module):
    return fn_or_module if isinstance(fn_or_module, nn.Module) else Lambda(fn_or_module)


def _flatten(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flatten(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _flatten(item)]
    return [value]


def check(fn_or_module, *inputs, backend="interpreter"):
    """Import, compile with `backend`, run, and compare every output with PyTorch's (values and dtypes)."""
    module = _module(fn_or_module).eval()
    mod, params = from_pytorch(module, inputs)
    assert params == {}
    compiled = transpile.compile(mod, backend=backend)
    got = _flatten(compiled(*[x.numpy() for x in inputs]))
    with torch.no_grad():
        want = [w.numpy() for w in _flatten(module(*inputs))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    return mod


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


X3 = _randn(2, 4, 6)
X4 = _randn(2, 4, 8, 8, seed=1)
INTS = torch.tensor([[-7, -2, 0, 3, 9], [5, -4, 1, 8, -1]])


def cases(table):
    return pytest.mark.parametrize("fn, inputs", list(table.values()), ids=list(table))


# ---------------------------------------------------------------- elementwise

ARITHMETIC = {
    "add_sub_alpha": (lambda x, y: torch.add(x, y, alpha=2) - torch.sub(y, x, alpha=0.5), (X3, X3 * 2)),
    "scalar_arithmetic": (lambda x: (x + 1) * 2.5 - 3 / (x * x + 1), (X3,)),
    "rsub": (lambda x: 1 - x, (X3,)),
    "broadcast": (lambda x, y: x * y + y, (X3, _randn(6))),
    "int_plus_float_scalar": (lambda x: x + 0.5, (INTS,)),
    "int_true_division": (lambda x: x / 2, (INTS,)),
    "int_tensor_times_float_tensor": (lambda x, y: x * y, (INTS, _randn(2, 5))),
    "floor_and_trunc_division": (
        lambda x: (torch.div(x, 3, rounding_mode="floor"), torch.div(x, 3, rounding_mode="trunc"), x // 4),
        (INTS,),
    ),
    "float_floor_division": (lambda x: torch.div(x, 0.3, rounding_mode="floor"), (X3,)),
    "remainder_fmod": (lambda x: (x % 3, torch.fmod(x, 3), x.float() % -2.5), (INTS,)),
    "pow": (lambda x: (x.abs() ** 1.5, x**2, x**3, 2**x, torch.pow(x.abs() + 1, x)), (X3,)),
    "maximum_minimum": (lambda x, y: (torch.maximum(x, y), torch.minimum(x, y)), (X3, X3.flip(2))),
    "comparisons": (lambda x, y: (x > 0, x <= y, x == y, x != 0.5, x < y, x >= -0.2), (X3, X3.flip(1))),
    "int_float_comparison": (lambda x: x > 0.5, (INTS,)),
    "logical": (lambda x: ((x > 0) & (x < 1)) | ~(x > 2) ^ (x > 0.5), (X3,)),
    "logical_functions": (
        lambda x: (torch.logical_and(x > 0, x < 1), torch.logical_or(x, x > 1), torch.logical_not(x)),
        (X3,),
    ),
    "bitwise_ints": (lambda x: ((x & 3) | (x ^ 1), x << 1, x >> 1, ~x), (INTS,)),
    "where": (
        lambda x, y: (torch.where(x > 0, x, y), torch.where(x > 0, x, 0.0), torch.where(x > 0, 1.0, x)),
        (X3, X3 * 3),
    ),
    "masked_fill": (lambda x: x.masked_fill(x > 0.5, -1.0), (X3,)),
    "clamp": (lambda x: (x.clamp(-0.5, 0.5), x.clamp(min=0.1), x.clamp(max=0.2), x.clamp(0.5, -0.5)), (X3,)),
    "clamp_tensor_bounds": (lambda x, lo: x.clamp(lo, lo + 1), (X3, _randn(6))),
    "clamp_ints": (lambda x: (x.clamp(-3, 4), x.clamp(min=0)), (INTS,)),
}

UNARY = {
    "math": (
        lambda x: (x.abs(), -x, x.exp(), x.abs().log(), x.abs().sqrt(), (x.abs() + 0.1).rsqrt(), x.sin(), x.cos()),
        (X3,),
    ),
    "more_math": (
        lambda x: (
            x.tanh(),
            x.sigmoid(),
            torch.erf(x),
            x.reciprocal(),
            x.sign(),
            x.abs().log1p(),
            x.expm1(),
            x.square(),
        ),
        (X3,),
    ),
    "rounding": (lambda x: ((x * 3).floor(), (x * 3).ceil(), (x * 3).round(), (x * 3).trunc()), (X3,)),
    "integer_rounding_and_abs": (lambda x: (x.floor(), x.abs(), -x, x.sign()), (INTS,)),
    "exp_of_ints": (lambda x: x.exp(), (INTS.clamp(-3, 3),)),
    "nan_inf": (lambda x: (x.log().isnan(), (x / 0).isinf(), x.isfinite()), (X3,)),
    "atan2_hypot": (
        lambda x, y: (torch.atan2(x, y), torch.atan2(x, torch.zeros_like(y)), torch.hypot(x, y)),
        (X3, X3.flip(1)),
    ),
    "signbit": (lambda x: (torch.signbit(x), torch.signbit(x * 0), torch.signbit(x.double())), (X3,)),
}


@cases(ARITHMETIC)
def test_arithmetic(fn, inputs):
    check(fn, *inputs)


@cases(UNARY)
def test_unary(fn, inputs):
    check(fn, *inputs)


# ---------------------------------------------------------------- activations

ACTIVATIONS = {
    "relu": nn.ReLU(),
    "relu6": nn.ReLU6(),
    "hardtanh": nn.Hardtanh(-0.5, 0.25),
    "hardswish": nn.Hardswish(),
    "hardsigmoid": nn.Hardsigmoid(),
    "silu": nn.SiLU(),
    "gelu": nn.GELU(),
    "gelu_tanh": nn.GELU("tanh"),
    "leaky_relu": nn.LeakyReLU(0.1),
    "elu": nn.ELU(0.7),
    "selu": nn.SELU(),
    "celu": nn.CELU(1.3),
    "softplus": nn.Softplus(beta=2.0, threshold=1.5),
    "mish": nn.Mish(),
    "prelu": nn.PReLU(4, init=0.3),
    "softmax": nn.Softmax(dim=1),
    "log_softmax": nn.LogSoftmax(dim=-1),
    "logsigmoid": nn.LogSigmoid(),
    "glu": nn.GLU(1),
    "tanhshrink": nn.Tanhshrink(),
    "softsign": nn.Softsign(),
    "threshold": nn.Threshold(0.1, 20.0),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation(name):
    check(ACTIVATIONS[name], X4 * 3)


# ---------------------------------------------------------------- convolution, matrix products, normalization


def _seeded(module, seed=0):
    """`module` with random (not default-initialized) parameters and buffers, in eval mode."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for tensor in list(module.parameters()) + [b for b in module.buffers() if b.is_floating_point()]:
            tensor.copy_(torch.rand_like(tensor) + 0.5 if tensor.dim() == 1 else torch.randn_like(tensor) * 0.5)
    return module.eval()


NN = {
    "conv2d": (nn.Conv2d(4, 6, 3, stride=2, padding=1), X4),
    "conv2d_dilated_grouped_no_bias": (nn.Conv2d(4, 8, 3, padding=2, dilation=2, groups=2, bias=False), X4),
    "depthwise": (nn.Conv2d(4, 4, 3, padding=1, groups=4), X4),
    "conv2d_asymmetric": (nn.Conv2d(4, 3, (1, 3), stride=(2, 1), padding=(0, 1)), X4),
    "conv1d": (nn.Conv1d(4, 5, 3, padding=1), X3),
    "conv_transpose2d": (nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1), X4),
    "linear": (nn.Linear(6, 3), X3),
    "linear_2d": (nn.Linear(6, 3), X3[0]),
    "batch_norm2d": (nn.BatchNorm2d(4), X4),
    "batch_norm1d": (nn.BatchNorm1d(4), X3),
    "layer_norm": (nn.LayerNorm(6), X3),
    "layer_norm_2d_no_affine": (nn.LayerNorm([4, 6], elementwise_affine=False), X3),
    "group_norm": (nn.GroupNorm(2, 4), X4),
    "instance_norm": (nn.InstanceNorm2d(4, affine=True), X4),
    "dropout": (nn.Dropout(0.5), X3),
    "embedding": (nn.Embedding(10, 3), torch.tensor([[1, 2, 9], [0, 0, 4]])),
}


@pytest.mark.parametrize("name", list(NN))
def test_nn(name):
    module, x = NN[name]
    check(_seeded(module), x)


VOLUMES = {
    "conv3d": nn.Conv3d(2, 3, 3, padding=1),
    "conv_transpose3d": nn.ConvTranspose3d(2, 3, 2, stride=2),
    "max_pool3d": nn.MaxPool3d(2),
    "avg_pool3d": nn.AvgPool3d(3, stride=2, padding=1),
    "adaptive_avg_pool3d": nn.AdaptiveAvgPool3d((2, 3, 3)),
}


@pytest.mark.parametrize("name", list(VOLUMES))
def test_volumes(name):
    check(_seeded(VOLUMES[name]), _randn(1, 2, 4, 5, 6))


def test_conv_transpose1d():
    check(_seeded(nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1)), X3)


MATMUL = {
    "mm": (lambda a, b: a @ b, (_randn(3, 4), _randn(4, 5))),
    "vector_matrix": (lambda a, b: a @ b, (_randn(4), _randn(4, 5))),
    "matrix_vector": (lambda a, b: a @ b, (_randn(3, 4), _randn(4))),
    "batched_broadcast": (lambda a, b: a @ b, (_randn(2, 3, 4, 5), _randn(3, 5, 6))),
    "bmm": (lambda a, b: torch.bmm(a, b), (_randn(2, 3, 4), _randn(2, 4, 5))),
    "baddbmm": (
        lambda x, a, b: torch.baddbmm(x, a, b, beta=0.5, alpha=2.0),
        (_randn(2, 3, 5), _randn(2, 3, 4), _randn(2, 4, 5)),
    ),
    "addmm": (lambda x, a, b: torch.addmm(x, a, b, beta=0.5, alpha=2.0), (_randn(5), _randn(3, 4), _randn(4, 5))),
    "einsum": (lambda a, b: torch.einsum("bij,bkj->bik", a, b), (_randn(2, 3, 4), _randn(2, 5, 4))),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (X4, X4 * 0.5, X4 + 1)),
}


@cases(MATMUL)
def test_matmul(fn, inputs):
    check(fn, *inputs)


# ---------------------------------------------------------------- pooling, padding, upsampling

POOL = {
    "max_pool2d": nn.MaxPool2d(3, stride=2, padding=1),
    "max_pool2d_ceil": nn.MaxPool2d(3, stride=2, ceil_mode=True),
    # On 7x6 inputs PyTorch keeps the ceil-mode window of H and drops W's (it would start past the input).
    "max_pool2d_ceil_mixed": nn.MaxPool2d(2, stride=3, ceil_mode=True),
    "avg_pool2d_ceil_mixed_exclude_pad": nn.AvgPool2d(3, stride=3, padding=1, ceil_mode=True, count_include_pad=False),
    "max_pool2d_dilated": nn.MaxPool2d(2, stride=1, dilation=2),
    "avg_pool2d": nn.AvgPool2d(3, stride=2, padding=1),
    "avg_pool2d_exclude_pad": nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
    "avg_pool2d_ceil": nn.AvgPool2d(3, stride=2, ceil_mode=True),
    "adaptive_avg_uneven": nn.AdaptiveAvgPool2d((3, 5)),
    "adaptive_avg_global": nn.AdaptiveAvgPool2d(1),
    "adaptive_max": nn.AdaptiveMaxPool2d(3),
    "pad_constant": Lambda(lambda x: F.pad(x, (1, 2, 0, 3), value=0.5)),
    "pad_crop": Lambda(lambda x: F.pad(x, (1, -2, -1, 0))),
    "pad_reflect": nn.ReflectionPad2d((1, 2, 2, 0)),
    "pad_replicate": nn.ReplicationPad2d(2),
    "upsample_nearest": nn.Upsample(scale_factor=2),
    "upsample_nearest_size": nn.Upsample(size=(12, 20)),
    "upsample_bilinear_align_corners": nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
}


@pytest.mark.parametrize("name", list(POOL))
def test_pool(name):
    check(POOL[name], X4[..., :7, :6] if "mixed" in name else X4)


def test_avg_pool_ceil_mode_mixed_with_padding_counted_is_rejected():
    module = nn.AvgPool2d(3, stride=3, padding=1, ceil_mode=True)
    with pytest.raises(UnsupportedOperatorsError, match="ceil_mode with count_include_pad"):
        from_pytorch(module, (X4[..., :6, :5],))


@pytest.mark.parametrize("module", [nn.MaxPool1d(2), nn.AvgPool1d(3, padding=1), nn.AdaptiveAvgPool1d(4)], ids=str)
def test_pool1d(module):
    check(module, X3)


def test_bilinear_upsampling_without_align_corners():
    module = nn.Upsample(scale_factor=2, mode="bilinear")
    if lookup("image.resize2d") is None:
        with pytest.raises(UnsupportedOperatorsError, match="upsample_bilinear2d"):
            from_pytorch(module, (X4,))
    else:
        check(module, X4)


# ---------------------------------------------------------------- shapes and indexing

SHAPE = {
    "view_flatten": (lambda x: (x.view(2, -1), x.reshape(8, 3, 2), torch.flatten(x, 1)), (X3,)),
    "permute_transpose": (lambda x: (x.permute(2, 0, 1), x.transpose(0, 2), x[0].t(), x.mT), (X3,)),
    "expand": (lambda x: (x[:, :1].expand(2, 4, 6), x[0, 0].expand(3, 6), x[:, :1].expand_as(x)), (X3,)),
    "squeeze_unsqueeze": (lambda x: (x[:, :1].squeeze(1), x.unsqueeze(-1), x[:1].squeeze(), x.squeeze(0)), (X3,)),
    "cat_stack": (
        lambda x, y: (torch.cat([x, y], 1), torch.stack([x, y], -1), torch.cat([x.int(), y], 0)),
        (X3, X3 * 2),
    ),
    "split_chunk_unbind": (lambda x: (x.split(4, 2), x.split([1, 3], 1), x.chunk(3, -1), x.unbind(0)), (X3,)),
    "slice": (lambda x: (x[:, 1:3], x[..., ::2], x[:, -3:], x[:, 1:-1, 2:5:2], x.narrow(2, 1, 3)), (X3,)),
    "select": (lambda x: (x[1], x[:, -1], x[:, :, 2]), (X3,)),
    "index_leading": (lambda x: x[torch.tensor([1, 0, 1])], (X3,)),
    "index_middle": (lambda x: x[:, [0, 3, -1]], (X3,)),
    "index_separated": (lambda x, i: x[i, :, i], (X3, torch.tensor([0, 1]))),
    "index_adjacent_broadcast": (lambda x, i, j: x[:, i, j], (X3, torch.tensor([[0], [3]]), torch.tensor([1, 5, -2]))),
    "index_constant_mask": (lambda x: x[:, torch.tensor([True, False, True, True])], (X3,)),
    "index_select": (lambda x: x.index_select(2, torch.tensor([5, 0, 0])), (X3,)),
    "gather": (lambda x, i: torch.gather(x, 2, i), (X3, torch.tensor([[[0, 5], [1, 2], [2, 0], [3, 4]]] * 2))),
    "flip_repeat_roll": (lambda x: (x.flip(0, 2), x.repeat(1, 2, 1), x.repeat(2, 1, 1, 1), x.roll(2, 2)), (X3,)),
    "tril": (lambda x: (x.tril(), x.triu(1)), (_randn(5, 5),)),
    "pixel_shuffle": (nn.PixelShuffle(2), (X4,)),
    "pixel_unshuffle_channel_shuffle": (lambda x: (F.pixel_unshuffle(x, 2), nn.ChannelShuffle(2)(x)), (X4,)),
    "unfold": (lambda x: F.unfold(x, 3, padding=1, stride=2), (X4,)),
}

SCATTER = {
    "scatter": (
        lambda x, i: (
            x.scatter(2, i, x[..., :2] * 10),
            x.scatter(1, i[:, :2].clamp(max=3), -1.0),
            x.scatter_add(2, i, x[..., 2:4]),
        ),
        (X3, torch.tensor([[[0, 5], [1, 2], [2, 0], [3, 4]]] * 2)),
    ),
    "scatter_reduce": (
        lambda x, i: x.scatter_reduce(2, i, x[..., :2], "amax"),
        (X3, torch.tensor([[[0, 5], [1, 2], [2, 0], [3, 4]]] * 2)),
    ),
    "index_put": (lambda x, i, v: x.index_put((i,), v), (X3, torch.tensor([1, 0]), _randn(2, 4, 6, seed=5))),
    "index_put_accumulate": (
        lambda x, i, j: x.index_put((i, j), torch.tensor(1.5), accumulate=True),
        (X3, torch.tensor([1, 0, 1]), torch.tensor([3, 3, 3])),
    ),
    "masked_assignment": (lambda x: torch.where(x > 0, x, x * 0).index_put((x < -0.5,), torch.tensor(7.0)), (X3,)),
    "bucketize": (
        lambda x: (
            torch.bucketize(x, torch.tensor([-0.5, 0.0, 0.5])),
            torch.bucketize(x, torch.tensor([-0.5, 0.0, 0.5]), right=True),
        ),
        (X3,),
    ),
    "grid_sample": (
        lambda x, g: (
            F.grid_sample(x, g, align_corners=False),
            F.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
        ),
        (X4, _randn(2, 3, 5, 2, seed=4)),
    ),
}


@cases(SHAPE)
def test_shape(fn, inputs):
    check(fn, *inputs)


@cases(SCATTER)
def test_scatter_and_sampling(fn, inputs):
    check(fn, *inputs)


COMPOSITES = {
    "lstm": (nn.LSTM(6, 3, num_layers=2, batch_first=True), (X3,)),
    "gru": (nn.GRU(6, 3, batch_first=True, bidirectional=True), (X3,)),
    "multihead_attention": (nn.MultiheadAttention(6, 2, batch_first=True), (X3, X3 * 0.5, X3 + 1)),
    "transformer_layer": (nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0, batch_first=True), (X3,)),
    "losses": (
        Lambda(lambda x, y: (F.mse_loss(x, y), F.cross_entropy(x[:, :, 0], torch.tensor([0, 3])), F.l1_loss(x, y))),
        (X3, X3.flip(2)),
    ),
    "local_response_norm": (nn.LocalResponseNorm(3), (X4,)),
    "bicubic": (nn.Upsample(scale_factor=2, mode="bicubic"), (X4,)),
}


@pytest.mark.filterwarnings("ignore:The tensor attributes:UserWarning")  # torch's RNN export
@pytest.mark.parametrize("name", list(COMPOSITES))
def test_composite_modules(name):
    module, inputs = COMPOSITES[name]
    check(_seeded(module), *inputs)


# ---------------------------------------------------------------- creation and conversion

CREATION = {
    "full_zeros_ones": (
        lambda x: (x + torch.zeros(2, 4, 6), torch.ones_like(x) * 2, torch.full((4, 6), 1.5) + x[0]),
        (X3,),
    ),
    "new_and_like": (
        lambda x: (x.new_zeros(6) + x, x.new_full((4, 6), 3.0) - x, torch.zeros_like(x, dtype=torch.int32)),
        (X3,),
    ),
    "arange": (lambda x: (x + torch.arange(6), torch.arange(1, 2, 0.25), torch.arange(5, dtype=torch.float64)), (X3,)),
    "scalar_tensor_where": (lambda x: torch.where(x > 0, x, torch.tensor(-1.0)), (X3,)),
    "casts": (
        lambda x: ((x * 3).int(), x.double() * 2, (x > 0).float(), x.to(torch.int64) + 1, x.half().float()),
        (X3,),
    ),
    "type_as": (lambda x, y: x.type_as(y) + y, (INTS, _randn(2, 5))),
    "linspace": (lambda x: torch.linspace(0, 1, 6) + x, (X3,)),
    "one_hot": (lambda i: F.one_hot(i, 6), (torch.tensor([0, 5, 2]),)),
}


@cases(CREATION)
def test_creation(fn, inputs):
    check(fn, *inputs)


# ---------------------------------------------------------------- reductions

REDUCTIONS = {
    "sum_mean": (lambda x: (x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.mean(-1), x.mean()), (X3,)),
    "int_sum": (lambda x: (x.sum(), x.sum(1), (x > 0).sum(1)), (INTS,)),
    "amax_amin": (lambda x: (x.amax(1), x.amin((0, 2), keepdim=True), x.max(), x.min()), (X3,)),
    "max_min_dim": (lambda x: (x.max(1), x.min(-1, keepdim=True)), (X3,)),
    "argmax_argmin": (lambda x: (x.argmax(), x.argmax(1), x.argmin(2, keepdim=True)), (X3,)),
    "any_all": (lambda x: ((x > 1).any(), (x > 0).any(1), (x > -1).all(2), (x > 0).all()), (X3,)),
    "var_std": (
        lambda x: (
            x.var(1),
            x.std(2, keepdim=True),
            x.var(),
            torch.var(x, 1, correction=0),
            torch.var(x, 2, correction=2),
        ),
        (X3,),
    ),
    "cumsum_prod": (lambda x: (x.cumsum(1), (x > 0).cumsum(-1), x.prod(2), x.prod(), x.cumprod(0)), (X3,)),
    "norm": (
        lambda x: (
            x.norm(dim=1),
            torch.linalg.vector_norm(x, 1, dim=2),
            torch.linalg.vector_norm(x, float("inf")),
            F.normalize(x, dim=1),
        ),
        (X3,),
    ),
    "logsumexp": (lambda x: torch.logsumexp(x, 1), (X3,)),
    "topk_sort": (
        lambda x: (
            x.topk(2, 1),
            x.topk(3, largest=False).values,
            x.sort(-1),
            x.sort(0, descending=True).values,
            x.argsort(1),
        ),
        (X3,),
    ),
}


@cases(REDUCTIONS)
def test_reduction(fn, inputs):
    check(fn, *inputs)


# ---------------------------------------------------------------- the program around the operators


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 4)
        self.register_buffer("offset", torch.arange(4, dtype=torch.float32))
        self.scale = torch.tensor([0.5, 1.0, 2.0, 4.0])  # a lifted constant

    def forward(self, x):
        y = self.body(x) + self.offset
        return {"y": y, "rest": [y * self.scale, (y.sum(-1),)]}


def test_nested_outputs_become_nested_tuples():
    mod = check(TwoHeads(), X3)
    body = mod["main"].body
    assert len(body.fields) == 2 and len(body.fields[1].fields) == 2


def test_unfrozen_params_are_named_after_their_state_dict_keys():
    module = _seeded(TwoHeads())
    mod, params = from_pytorch(module, (X3,), freeze_params=False)
    names = [p.name_hint for p in mod["main"].params]
    assert names[0] == "x"
    assert set(names[1:]) == {"body.weight", "body.bias", "offset", "scale"} == set(params)
    np.testing.assert_array_equal(params["body.weight"], module.body.weight.detach().numpy())
    compiled = transpile.compile(mod, backend="interpreter")
    got = _flatten(compiled(X3.numpy(), *[params[n] for n in names[1:]]))
    with torch.no_grad():
        want = _flatten(module(X3))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=RTOL, atol=ATOL)


class ConvClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(4, 6, 3), nn.BatchNorm2d(6), nn.ReLU())
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        # As torchvision's classifiers: the view's batch size is the symbolic size of the input.
        return self.head(torch.flatten(self.features(x).mean((2, 3), keepdim=True), 1))


@pytest.mark.parametrize(
    "module, example, type_text",
    [
        (nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2)), X3[0], "Tensor[(?, 6), float32]"),
        (ConvClassifier(), X4, "Tensor[(?, 4, 8, 8), float32]"),
    ],
    ids=["mlp", "conv_classifier"],
)
def test_from_exported_program_with_a_dynamic_batch(module, example, type_text):
    module = _seeded(module)
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(module, (example,), dynamic_shapes=({0: batch},))
    mod, _ = from_exported_program(program)
    assert type_text in mod.astext()
    compiled = transpile.compile(mod, backend="interpreter")
    for rows in (1, 3):
        x = _randn(rows, *example.shape[1:], seed=rows)
        np.testing.assert_allclose(compiled(x.numpy()), module(x).detach().numpy(), rtol=RTOL, atol=ATOL)


class FlattenRows(nn.Module):
    def forward(self, x):
        return x.view(x.shape[0], -1).sum(1) * x.shape[1]


def test_dynamic_sizes_feed_views():
    program = torch.export.export(
        FlattenRows(),
        (X3,),
        dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=16)},),
    )
    mod, _ = from_exported_program(program)
    compiled = transpile.compile(mod, backend="interpreter")
    x = _randn(5, 4, 6)
    np.testing.assert_allclose(compiled(x.numpy()), (x.view(5, -1).sum(1) * 4).numpy(), rtol=RTOL, atol=ATOL)


def test_non_tensor_example_inputs_are_specialized():
    check(Lambda(lambda x, k=2: x * k), X3)
    mod, _ = from_pytorch(Lambda(lambda x, k: x * k), (X3, 3))
    np.testing.assert_allclose(transpile.compile(mod, backend="interpreter")(X3.numpy()), (X3 * 3).numpy(), rtol=RTOL)


# ---------------------------------------------------------------- errors


def test_unsupported_operators_are_all_listed_with_their_nodes():
    with pytest.raises(UnsupportedOperatorsError) as info:
        from_pytorch(Lambda(lambda x: torch.erfinv(x) + torch.lgamma(x) + torch.erfinv(x * 2)), (X3,))
    error = info.value
    assert error.source == "PyTorch"
    assert sorted(u.op for u in error.unsupported) == [
        "aten.erfinv.default",
        "aten.erfinv.default",
        "aten.lgamma.default",
    ]
    assert {u.node for u in error.unsupported} == {"erfinv", "erfinv_1", "lgamma"}
    assert "node 'lgamma'" in str(error)


def test_configurations_a_converter_cannot_express_are_listed():
    with pytest.raises(UnsupportedOperatorsError) as info:
        from_pytorch(Lambda(lambda x: (x[x > 0], F.max_pool2d(x, 2, return_indices=True)[1])), (X4,))
    details = {u.op: u.detail for u in info.value.unsupported}
    assert "boolean mask" in details["aten.index.Tensor"]
    assert "indices" in details["aten.max_pool2d_with_indices.default"]


def test_training_mode_programs_are_rejected():
    program = torch.export.export(nn.Dropout(0.5).train(), (X3,))
    with pytest.raises(UnsupportedOperatorsError, match="training mode"):
        from_exported_program(program)


def test_a_converter_disagreeing_with_pytorch_fails_at_import(monkeypatch):
    from transpile.relay.frontend.pytorch import converters

    converters.lookup_converter("aten.relu.default")
    monkeypatch.setitem(
        converters._CONVERTERS, "aten.relu.default", lambda ctx: ctx.b.call("cast", ctx.tensor("self"), dtype="float64")
    )
    with pytest.raises(FrontendError, match=r"node 'relu'.*PyTorch computes a \(2, 4, 6\) float32 tensor"):
        from_pytorch(nn.ReLU(), (X3,))


def test_wrong_arguments():
    with pytest.raises(FrontendError, match="expects a torch.nn.Module"):
        from_pytorch(lambda x: x, (X3,))
    with pytest.raises(FrontendError, match="expects a torch.export.ExportedProgram"):
        from_exported_program(nn.ReLU())
    with pytest.raises(FrontendError, match="torch.export.export failed"):
        from_pytorch(nn.Linear(3, 2), (X3,))


def test_without_torch_the_frontend_imports_and_explains():
    script = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # as if torch were not installed
        import transpile.relay.frontend as frontend
        try:
            frontend.from_pytorch(object(), ())
        except frontend.FrontendError as exc:
            print("ERROR", exc)
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "needs the `torch` package" in out and "pip install" in out


# ---------------------------------------------------------------- the native backend


class SmallConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.depthwise = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        y = F.hardswish(self.norm(self.conv(x)))
        y = F.max_pool2d(self.depthwise(y), 2, ceil_mode=True)
        return self.head(y.mean((2, 3))).softmax(-1)


class AttentionBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

    def forward(self, x, mask):
        y, _ = self.attention(x, x, x, key_padding_mask=mask, need_weights=False)
        y = self.norm(x + y)
        return y + self.mlp(y)


def test_cpp_conv_net():
    check(_seeded(SmallConvNet()), X4, backend="cpp")


def test_cpp_attention_block():
    mask = torch.tensor([[False] * 5 + [True], [False] * 6])
    check(_seeded(AttentionBlock()), _randn(2, 6, 8, seed=3), mask, backend="cpp")


def test_cpp_indexing_and_integer_arithmetic():
    check(
        lambda x, i: (x[:, i] * (i.sum() // 2), torch.where(i > 1, i, -i).cumsum(0)),
        X3,
        torch.tensor([3, 0, 2]),
        backend="cpp",
    )
