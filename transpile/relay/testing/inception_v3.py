"""Inception-v3 test network (TVM's relay.testing.inception_v3), NCHW, for 299×299 images.

Szegedy et al., "Rethinking the Inception Architecture for Computer Vision". A convolutional stem, then
inception modules of five kinds (the paper's figures 5, 6, 7 and two grid reductions), global 8×8 average
pool, dense, softmax. Every convolution is conv + batch norm (no scale) + relu. The capitalized builder
names (Conv, Pooling, Inception7A…) are TVM's, kept for code that calls them.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload

__all__ = [
    "Conv",
    "Pooling",
    "Inception7A",
    "Inception7B",
    "Inception7C",
    "Inception7D",
    "Inception7E",
    "get_net",
    "get_workload",
]


def Conv(data, num_filter, kernel=(1, 1), stride=(1, 1), pad=(0, 0), name=None, suffix=""):
    """Convolution `<name><suffix>_conv1`, batch norm `<name><suffix>_bn`, relu."""
    from .. import nn

    conv = layers.conv2d(
        data=data,
        channels=int(num_filter),
        kernel_size=kernel,
        strides=stride,
        padding=pad,
        name=f"{name}{suffix}_conv1",
    )
    return nn.relu(layers.batch_norm_infer(data=conv, epsilon=2e-5, scale=False, name=f"{name}{suffix}_bn"))


def Pooling(data, kernel, stride, pad, pool_type, name):
    """Max pooling, or average pooling counting the padding, of one window."""
    from .. import nn

    if pool_type == "max":
        return nn.max_pool2d(data=data, pool_size=kernel, strides=stride, padding=pad)
    if pool_type == "avg":
        return nn.avg_pool2d(data=data, pool_size=kernel, strides=stride, padding=pad, count_include_pad=True)
    raise TranspileError(f"inception_v3 pooling {name}: pool_type must be max or avg, not {pool_type!r}")


def _concat(towers):
    from .. import concatenate

    return concatenate(tuple(towers), axis=1)


def _same_pool(data, pool, name):
    return Pooling(data=data, kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type=pool, name=f"{pool}_pool_{name}_pool")


def Inception7A(data, num_1x1, num_3x3_red, num_3x3_1, num_3x3_2, num_5x5_red, num_5x5, pool, proj, name):
    """35×35 module: 1×1; 1×1 → 5×5; 1×1 → 3×3 → 3×3; pool → 1×1 projection."""
    tower_1x1 = Conv(data, num_1x1, name=f"{name}_conv")
    tower_5x5 = Conv(data, num_5x5_red, name=f"{name}_tower", suffix="_conv")
    tower_5x5 = Conv(tower_5x5, num_5x5, kernel=(5, 5), pad=(2, 2), name=f"{name}_tower", suffix="_conv_1")
    tower_3x3 = Conv(data, num_3x3_red, name=f"{name}_tower_1", suffix="_conv")
    tower_3x3 = Conv(tower_3x3, num_3x3_1, kernel=(3, 3), pad=(1, 1), name=f"{name}_tower_1", suffix="_conv_1")
    tower_3x3 = Conv(tower_3x3, num_3x3_2, kernel=(3, 3), pad=(1, 1), name=f"{name}_tower_1", suffix="_conv_2")
    projection = Conv(_same_pool(data, pool, name), proj, name=f"{name}_tower_2", suffix="_conv")
    return _concat((tower_1x1, tower_5x5, tower_3x3, projection))


def Inception7B(data, num_3x3, num_d3x3_red, num_d3x3_1, num_d3x3_2, pool, name):
    """35→17 grid reduction: 3×3/2; 1×1 → 3×3 → 3×3/2; 3×3/2 max pool."""
    tower_3x3 = Conv(data, num_3x3, kernel=(3, 3), pad=(0, 0), stride=(2, 2), name=f"{name}_conv")
    tower_d3x3 = Conv(data, num_d3x3_red, name=f"{name}_tower", suffix="_conv")
    tower_d3x3 = Conv(
        tower_d3x3, num_d3x3_1, kernel=(3, 3), pad=(1, 1), stride=(1, 1), name=f"{name}_tower", suffix="_conv_1"
    )
    tower_d3x3 = Conv(
        tower_d3x3, num_d3x3_2, kernel=(3, 3), pad=(0, 0), stride=(2, 2), name=f"{name}_tower", suffix="_conv_2"
    )
    pooling = Pooling(
        data=data, kernel=(3, 3), stride=(2, 2), pad=(0, 0), pool_type="max", name=f"max_pool_{name}_pool"
    )
    return _concat((tower_3x3, tower_d3x3, pooling))


def Inception7C(
    data,
    num_1x1,
    num_d7_red,
    num_d7_1,
    num_d7_2,
    num_q7_red,
    num_q7_1,
    num_q7_2,
    num_q7_3,
    num_q7_4,
    pool,
    proj,
    name,
):
    """17×17 module with factorized 7×7s: 1×1; 1×1 → 1×7 → 7×1; 1×1 → (7×1 → 1×7)×2; pool → 1×1."""
    row, column = ((1, 7), (0, 3)), ((7, 1), (3, 0))
    tower_1x1 = Conv(data=data, num_filter=num_1x1, kernel=(1, 1), name=f"{name}_conv")
    tower_d7 = Conv(data=data, num_filter=num_d7_red, name=f"{name}_tower", suffix="_conv")
    for index, (filters, (kernel, pad)) in enumerate(((num_d7_1, row), (num_d7_2, column)), start=1):
        tower_d7 = Conv(
            data=tower_d7, num_filter=filters, kernel=kernel, pad=pad, name=f"{name}_tower", suffix=f"_conv_{index}"
        )
    tower_q7 = Conv(data=data, num_filter=num_q7_red, name=f"{name}_tower_1", suffix="_conv")
    quad = ((num_q7_1, column), (num_q7_2, row), (num_q7_3, column), (num_q7_4, row))
    for index, (filters, (kernel, pad)) in enumerate(quad, start=1):
        tower_q7 = Conv(
            data=tower_q7, num_filter=filters, kernel=kernel, pad=pad, name=f"{name}_tower_1", suffix=f"_conv_{index}"
        )
    projection = Conv(
        data=_same_pool(data, pool, name), num_filter=proj, kernel=(1, 1), name=f"{name}_tower_2", suffix="_conv"
    )
    return _concat((tower_1x1, tower_d7, tower_q7, projection))


def Inception7D(data, num_3x3_red, num_3x3, num_d7_3x3_red, num_d7_1, num_d7_2, num_d7_3x3, pool, name):
    """17→8 grid reduction: 1×1 → 3×3/2; 1×1 → 1×7 → 7×1 → 3×3/2; 3×3/2 pool."""
    tower_3x3 = Conv(data=data, num_filter=num_3x3_red, name=f"{name}_tower", suffix="_conv")
    tower_3x3 = Conv(
        data=tower_3x3,
        num_filter=num_3x3,
        kernel=(3, 3),
        pad=(0, 0),
        stride=(2, 2),
        name=f"{name}_tower",
        suffix="_conv_1",
    )
    tower_d7 = Conv(data=data, num_filter=num_d7_3x3_red, name=f"{name}_tower_1", suffix="_conv")
    tower_d7 = Conv(
        data=tower_d7, num_filter=num_d7_1, kernel=(1, 7), pad=(0, 3), name=f"{name}_tower_1", suffix="_conv_1"
    )
    tower_d7 = Conv(
        data=tower_d7, num_filter=num_d7_2, kernel=(7, 1), pad=(3, 0), name=f"{name}_tower_1", suffix="_conv_2"
    )
    tower_d7 = Conv(
        data=tower_d7, num_filter=num_d7_3x3, kernel=(3, 3), stride=(2, 2), name=f"{name}_tower_1", suffix="_conv_3"
    )
    pooling = Pooling(
        data=data, kernel=(3, 3), stride=(2, 2), pool_type=pool, pad=(0, 0), name=f"{pool}_pool_{name}_pool"
    )
    return _concat((tower_3x3, tower_d7, pooling))


def Inception7E(
    data,
    num_1x1,
    num_d3_red,
    num_d3_1,
    num_d3_2,
    num_3x3_d3_red,
    num_3x3,
    num_3x3_d3_1,
    num_3x3_d3_2,
    pool,
    proj,
    name,
):
    """8×8 module with expanded filter banks: 1×1; 1×1 → (1×3 | 3×1); 1×1 → 3×3 → (1×3 | 3×1); pool → 1×1."""
    tower_1x1 = Conv(data=data, num_filter=num_1x1, kernel=(1, 1), name=f"{name}_conv")
    tower_d3 = Conv(data=data, num_filter=num_d3_red, name=f"{name}_tower", suffix="_conv")
    tower_d3_a = Conv(
        data=tower_d3, num_filter=num_d3_1, kernel=(1, 3), pad=(0, 1), name=f"{name}_tower", suffix="_mixed_conv"
    )
    tower_d3_b = Conv(
        data=tower_d3, num_filter=num_d3_2, kernel=(3, 1), pad=(1, 0), name=f"{name}_tower", suffix="_mixed_conv_1"
    )
    tower_3x3 = Conv(data=data, num_filter=num_3x3_d3_red, name=f"{name}_tower_1", suffix="_conv")
    tower_3x3 = Conv(
        data=tower_3x3, num_filter=num_3x3, kernel=(3, 3), pad=(1, 1), name=f"{name}_tower_1", suffix="_conv_1"
    )
    tower_3x3_a = Conv(
        data=tower_3x3, num_filter=num_3x3_d3_1, kernel=(1, 3), pad=(0, 1), name=f"{name}_tower_1", suffix="_mixed_conv"
    )
    tower_3x3_b = Conv(
        data=tower_3x3,
        num_filter=num_3x3_d3_2,
        kernel=(3, 1),
        pad=(1, 0),
        name=f"{name}_tower_1",
        suffix="_mixed_conv_1",
    )
    projection = Conv(
        data=_same_pool(data, pool, name), num_filter=proj, kernel=(1, 1), name=f"{name}_tower_2", suffix="_conv"
    )
    return _concat((tower_1x1, tower_d3_a, tower_d3_b, tower_3x3_a, tower_3x3_b, projection))


def get_net(batch_size, num_classes, image_shape, dtype):
    """The network as a Function of an NCHW `data` batch (299×299 images give the 8×8 final grid)."""
    from .. import nn
    from ..analysis import free_vars
    from ..expr import Function, var

    data = var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    # stem
    body = Conv(data, 32, kernel=(3, 3), stride=(2, 2), name="conv")
    body = Conv(body, 32, kernel=(3, 3), name="conv_1")
    body = Conv(body, 64, kernel=(3, 3), pad=(1, 1), name="conv_2")
    body = Pooling(data=body, kernel=(3, 3), stride=(2, 2), pool_type="max", pad=(0, 0), name="pool")
    body = Conv(body, 80, kernel=(1, 1), name="conv_3")
    body = Conv(body, 192, kernel=(3, 3), name="conv_4")
    body = Pooling(data=body, kernel=(3, 3), stride=(2, 2), pool_type="max", pad=(0, 0), name="pool1")
    # 35×35
    body = Inception7A(body, 64, 64, 96, 96, 48, 64, "avg", 32, "mixed")
    body = Inception7A(body, 64, 64, 96, 96, 48, 64, "avg", 64, "mixed_1")
    body = Inception7A(body, 64, 64, 96, 96, 48, 64, "avg", 64, "mixed_2")
    body = Inception7B(body, 384, 64, 96, 96, "max", "mixed_3")
    # 17×17
    body = Inception7C(body, 192, 128, 128, 192, 128, 128, 128, 128, 192, "avg", 192, "mixed_4")
    body = Inception7C(body, 192, 160, 160, 192, 160, 160, 160, 160, 192, "avg", 192, "mixed_5")
    body = Inception7C(body, 192, 160, 160, 192, 160, 160, 160, 160, 192, "avg", 192, "mixed_6")
    body = Inception7C(body, 192, 192, 192, 192, 192, 192, 192, 192, 192, "avg", 192, "mixed_7")
    body = Inception7D(body, 192, 320, 192, 192, 192, 192, "max", "mixed_8")
    # 8×8
    body = Inception7E(body, 320, 384, 384, 384, 448, 384, 384, 384, "avg", 192, "mixed_9")
    body = Inception7E(body, 320, 384, 384, 384, 448, 384, 384, 384, "max", 192, "mixed_10")
    pooled = Pooling(data=body, kernel=(8, 8), stride=(1, 1), pool_type="avg", pad=(0, 0), name="global_pool")
    logits = nn.dense(nn.batch_flatten(pooled), var("fc1_weight"), units=num_classes)
    # the bias is named fc2_bias in TVM's network; kept so params dicts match
    logits = nn.bias_add(logits, var("fc2_bias"), axis=-1)
    net = nn.softmax(data=logits)
    return Function(free_vars(net), net)


def get_workload(batch_size=1, num_classes=1000, image_shape=(3, 299, 299), dtype="float32"):
    """(module, params) of Inception-v3, parameters initialized by Xavier (seed 0)."""
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype))
