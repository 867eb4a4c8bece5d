"""DCGAN generator test network (TVM's relay.testing.dcgan): a random code to a 64×64 image.

Radford et al., "Unsupervised Representation Learning with Deep Convolutional GANs". A dense layer to a 4×4
map of 8·ngf channels, three stride-2 transposed convolutions with batch norm and relu (8, 16, 32 pixels), a
last transposed convolution to the image's channels, tanh.
"""

from __future__ import annotations

from ...errors import TranspileError
from . import layers
from .init import create_workload

__all__ = ["deconv2d", "deconv2d_bn_relu", "get_net", "get_workload"]


class DCGANConfigError(TranspileError):
    """A DCGAN shape or layout the generator has no definition for."""


def deconv2d(data, ishape, oshape, kshape, layout, name, stride=(2, 2)):
    """A transposed convolution `name` to `oshape` (C, H, W): padding (k-1)//2, output padding to hit H×W."""
    if layout not in ("NCHW", "NHWC"):
        raise DCGANConfigError(f"dcgan: layout must be NCHW or NHWC, not {layout!r}")
    target_height, target_width = oshape[-2], oshape[-1]
    pad_y, pad_x = (kshape[0] - 1) // 2, (kshape[1] - 1) // 2
    adj_y = (target_height + 2 * pad_y - kshape[0]) % stride[0]
    adj_x = (target_width + 2 * pad_x - kshape[1]) % stride[1]
    return layers.conv2d_transpose(
        data,
        kernel_size=kshape,
        strides=stride,
        channels=oshape[0],
        padding=(pad_y, pad_x),
        output_padding=(adj_y, adj_x),
        data_layout=layout,
        kernel_layout="IOHW" if layout == "NCHW" else "HWOI",
        name=name,
    )


def deconv2d_bn_relu(data, prefix, **kwargs):
    """deconv2d `<prefix>_deconv`, batch norm `<prefix>_batch_norm` (no scale), relu."""
    from .. import nn

    body = deconv2d(data, name=f"{prefix}_deconv", **kwargs)
    bn_axis = kwargs.get("layout", "NCHW").index("C")
    body = layers.batch_norm_infer(body, epsilon=1e-5 + 1e-12, scale=False, axis=bn_axis, name=f"{prefix}_batch_norm")
    return nn.relu(body)


def get_net(batch_size, random_len=100, oshape=(3, 64, 64), ngf=128, code=None, layout="NCHW", dtype="float32"):
    """The generator as a Function of `data` (batch_size × random_len), or of the free variables of `code`."""
    from .. import nn, reshape, tanh
    from ..analysis import free_vars
    from ..expr import Function, var

    if tuple(oshape[-2:]) != (64, 64):
        raise DCGANConfigError(f"dcgan: only 64×64 images are generated, oshape {tuple(oshape)} asked")
    if layout not in ("NCHW", "NHWC"):
        raise DCGANConfigError(f"dcgan: layout must be NCHW or NHWC, not {layout!r}")
    code = var("data", dtype=dtype, shape=(batch_size, random_len)) if code is None else code
    dense = nn.relu(nn.dense(code, var("dense_weight"), units=4 * 4 * ngf * 8))
    seed_shape = (-1, ngf * 8, 4, 4) if layout == "NCHW" else (-1, 4, 4, ngf * 8)
    body = reshape(dense, newshape=seed_shape)
    channels, size = ngf * 8, 4
    for prefix, out_channels in (("g2", ngf * 4), ("g3", ngf * 2), ("g4", ngf)):
        body = deconv2d_bn_relu(
            body,
            ishape=(channels, size, size),
            oshape=(out_channels, size * 2, size * 2),
            kshape=(4, 4),
            layout=layout,
            prefix=prefix,
        )
        channels, size = out_channels, size * 2
    image = deconv2d(
        body, ishape=(channels, size, size), oshape=tuple(oshape[-3:]), kshape=(4, 4), layout=layout, name="g5_deconv"
    )
    out = tanh(image)
    return Function(free_vars(out), out)


def get_workload(batch_size, oshape=(3, 64, 64), ngf=128, random_len=100, layout="NCHW", dtype="float32"):
    """(module, params) of the generator, parameters initialized by Xavier (seed 0)."""
    return create_workload(get_net(batch_size, random_len, oshape=oshape, ngf=ngf, layout=layout, dtype=dtype))
