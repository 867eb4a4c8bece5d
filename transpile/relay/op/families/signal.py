"""Signal processing: stft, the short-time Fourier transform (TVM's transform.cc / topi.stft).

stft(data, window) of a 1-D signal or a 2-D batch of signals: frame t is data[t*hop_length :
t*hop_length + n_fft], multiplied by the window (win_length values, zero-padded to n_fft on both
sides, as torch.stft does), and transformed by a DFT of size n_fft. The result holds
(real, imaginary) pairs: shape [batch,] frequencies, frames, 2 with n_fft // 2 + 1 frequencies
when onesided, n_fft otherwise; `normalized` divides by sqrt(n_fft). torch.stft(center=False)
gives the same numbers. TVM's kernel ran its DFT over win_length points without padding the
window; where win_length == n_fft (all of TVM's tests) both agree.
"""

from __future__ import annotations

import numpy as np

from ...ty import AnyDim, TensorType
from ..common import fmt_type
from ..registry import AttrField, OpDef, OpPattern, RelationError, make_call, register
from .support import as_out, is_any, is_bool, is_float, tensor_args, to_bool, to_int
from .te_support import require, require_equal

__all__ = ["stft_geometry"]


def stft_geometry(attrs):
    """(frequencies, left zero-padding of the window) of valid attributes."""
    frequencies = attrs.n_fft // 2 + 1 if attrs.onesided else attrs.n_fft
    return frequencies, (attrs.n_fft - attrs.win_length) // 2


def _stft_rel(arg_types, attrs):
    data, window = tensor_args(arg_types, 2, "stft", ["data", "window"])
    if not is_float(data.dtype) or data.ndim not in (1, 2):
        raise RelationError(f"stft: data must be a 1-D signal or a 2-D batch of float signals, got {fmt_type(data)}")
    if window.ndim != 1 or is_bool(window.dtype):
        raise RelationError(f"stft: window must be a 1-D numeric tensor, got {fmt_type(window)}")
    if attrs.n_fft < 1 or attrs.hop_length < 1:
        raise RelationError(f"stft: n_fft and hop_length must be positive, got {attrs.n_fft} and {attrs.hop_length}")
    if not 1 <= attrs.win_length <= attrs.n_fft:
        raise RelationError(f"stft: win_length must be in [1, n_fft={attrs.n_fft}], got {attrs.win_length}")
    if not is_any(window.shape[0]) and window.shape[0] != attrs.win_length:
        raise RelationError(f"stft: window {fmt_type(window)} must hold win_length={attrs.win_length} values")
    length = data.shape[-1]
    if is_any(length):
        frames = AnyDim()
    elif length < attrs.n_fft:
        raise RelationError(f"stft: the signals of {fmt_type(data)} are shorter than n_fft={attrs.n_fft}")
    else:
        frames = (length - attrs.n_fft) // attrs.hop_length + 1
    frequencies, _ = stft_geometry(attrs)
    return TensorType((*data.shape[:-1], frequencies, frames, 2), data.dtype)


def _stft_impl(args, attrs, out_type):
    data, window = np.asarray(args[0]), np.asarray(args[1])
    n_fft, hop = attrs.n_fft, attrs.hop_length
    if window.shape[0] != attrs.win_length:
        raise ValueError(f"stft: the window holds {window.shape[0]} values, win_length is {attrs.win_length}")
    if data.shape[-1] < n_fft:
        raise ValueError(f"stft: signals of length {data.shape[-1]} are shorter than n_fft={n_fft}")
    frequencies, left = stft_geometry(attrs)
    padded = np.zeros(n_fft, dtype=np.float64)
    padded[left : left + attrs.win_length] = window.astype(np.float64)
    frames = (data.shape[-1] - n_fft) // hop + 1
    positions = np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]
    windowed = data.astype(np.float64)[..., positions] * padded  # [batch,] frames, n_fft
    # The angle from (f * k) mod n_fft keeps it exact for large f * k (the kernel does the same).
    angle = 2 * np.pi * (np.outer(np.arange(frequencies), np.arange(n_fft)) % n_fft) / n_fft
    real = np.einsum("...tk,fk->...ft", windowed, np.cos(angle))
    imaginary = -np.einsum("...tk,fk->...ft", windowed, np.sin(angle))
    out = np.stack([real, imaginary], axis=-1)
    if attrs.normalized:
        out = out / np.sqrt(n_fft)
    return as_out(out, out_type)


def te_stft(inputs, attrs, out_type):
    from tvm import te, tirx

    data, window = inputs
    n_fft, hop = attrs.n_fft, attrs.hop_length
    frequencies, left = stft_geometry(attrs)
    length = data.shape[-1]
    require_equal(
        [window.shape[0], attrs.win_length], f"stft: the window must hold win_length={attrs.win_length} values"
    )
    require(length >= n_fft, f"stft: the signals are shorter than n_fft={n_fft}")
    work = "float64"
    frames = tirx.floordiv(length - n_fft, hop) + 1
    pi2 = tirx.const(2 * np.pi / n_fft, work)

    def cosine_sine(f, k, part):
        angle = tirx.floormod(f * k, n_fft).astype(work) * pi2
        return tirx.Select(part == 0, tirx.cos(angle), -tirx.sin(angle))

    table = te.compute((frequencies, n_fft, 2), cosine_sine, name="T_stft_twiddle")
    padded = te.compute(
        (n_fft,),
        lambda k: tirx.if_then_else(
            tirx.And(k >= left, k < left + attrs.win_length), window[k - left].astype(work), tirx.const(0.0, work)
        ),
        name="T_stft_window",
    )
    batch = list(data.shape[:-1])
    k = te.reduce_axis((0, n_fft), name="k")

    def body(*index):
        *outer, f, t, part = index
        sample = data(*outer, t * hop + k).astype(work)
        return te.sum(sample * padded[k] * table[f, k, part], axis=k)

    spectrum = te.compute((*batch, frequencies, frames, 2), body, name="T_stft_sum")
    scale = 1.0 / np.sqrt(n_fft) if attrs.normalized else 1.0
    return te.compute(
        spectrum.shape,
        lambda *i: (spectrum(*i) * tirx.const(scale, work)).astype(out_type.dtype),
        name="T_stft",
    )


class StftOpDef(OpDef):
    """relay.stft(data, n_fft, hop_length=None, win_length=None, window=None, normalized=False, onesided=True).

    As TVM's builder: hop_length defaults to n_fft // 4, win_length to n_fft, the window to ones
    (int32; win_length of them, where TVM made n_fft)."""

    def __call__(self, data, n_fft, hop_length=None, win_length=None, window=None, normalized=False, onesided=True):
        from ...expr import to_expr

        hop_length = n_fft // 4 if hop_length is None else hop_length
        win_length = n_fft if win_length is None else win_length
        if window is None:
            window = make_call("ones", [], {"shape": [int(win_length)], "dtype": "int32"})
        attrs = {
            "n_fft": n_fft,
            "hop_length": hop_length,
            "win_length": win_length,
            "normalized": normalized,
            "onesided": onesided,
        }
        return make_call(self.name, [to_expr(data), to_expr(window)], attrs)


register(
    StftOpDef(
        "stft",
        2,
        _stft_rel,
        OpPattern.OPAQUE,
        _stft_impl,
        attrs=(
            AttrField("n_fft", -1, to_int, "size of the Fourier transform"),
            AttrField("hop_length", -1, to_int, "distance between frames"),
            AttrField("win_length", -1, to_int, "length of the window, at most n_fft"),
            AttrField("normalized", False, to_bool, "divide by sqrt(n_fft)"),
            AttrField("onesided", True, to_bool, "only the n_fft // 2 + 1 non-redundant frequencies"),
        ),
        te_impl=te_stft,
        extras={"input_names": ("data", "window"), "support_level": 3},
        description="Short-time Fourier transform of a signal or a batch of signals: (real, imaginary) pairs "
        "per frequency and frame.",
    )
)
