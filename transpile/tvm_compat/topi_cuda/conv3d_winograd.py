"""TVM's `tvm.topi.cuda.conv3d_winograd` helpers: the Winograd tile size TVM chose for a 3-D convolution."""

from __future__ import annotations

from ...errors import TranspileError

__all__ = ["_infer_tile_size"]


def _infer_tile_size(data, kernel):
    """TVM's rule: tile size 4 when the input height (NCDHW) is a multiple of 8, else 2."""
    shape = tuple(getattr(data, "shape", ()))
    if len(shape) != 5:
        raise TranspileError(f"conv3d winograd tile size: expected NCDHW data (5 dims), got shape {shape}")
    height = int(shape[3])
    return 4 if height % 8 == 0 else 2
