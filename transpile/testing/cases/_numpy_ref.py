"""Hand-written numpy references for the neural-network operators (independent of the operator registry)."""

from __future__ import annotations

import numpy as np

__all__ = ["conv2d_nchw", "pool2d_nchw", "softmax", "log_softmax", "sigmoid", "layer_norm", "batch_norm"]


def conv2d_nchw(x, w, stride: int = 1, pad: int = 0):
    """Cross-correlation of NCHW data with an OIHW kernel, symmetric zero padding."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, width = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (width - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw].astype(np.float64)
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w.astype(np.float64))
    return out.astype(x.dtype)


def pool2d_nchw(x, size: int, stride: int, kind: str):
    n, c, h, w = x.shape
    oh, ow = (h - size) // stride + 1, (w - size) // stride + 1
    out = np.zeros((n, c, oh, ow), dtype=x.dtype)
    reduce = np.max if kind == "max" else np.mean
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = reduce(
                x[:, :, i * stride : i * stride + size, j * stride : j * stride + size], axis=(2, 3)
            )
    return out


def softmax(x, axis: int = -1):
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis: int = -1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def layer_norm(x, gamma, beta, eps: float = 1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + eps) * gamma + beta).astype(x.dtype)


def batch_norm(x, gamma, beta, mean, var, eps: float = 1e-5):
    """Inference-mode batch norm over axis 1 of NCHW data."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = gamma.reshape(shape) / np.sqrt(var.reshape(shape) + eps)
    return ((x - mean.reshape(shape)) * scale + beta.reshape(shape)).astype(x.dtype)
