"""TVM's `tvm.contrib.nvcc` capability checks (tests guard float16/int8 CUDA cases with them).

They decide from a compute capability string ("7.5"), as TVM's did; transpile itself runs on the host CPU.
"""

from __future__ import annotations

__all__ = ["parse_compute_version", "have_fp16", "have_int8", "have_tensorcore", "have_bf16"]


def parse_compute_version(compute_version) -> tuple[int, int]:
    """(major, minor) of a compute capability like "8.6"."""
    parts = str(compute_version).split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ValueError(f"compute version {compute_version!r} is not of the form 'major.minor'") from None


def have_fp16(compute_version) -> bool:
    """Whether CUDA devices of this capability have float16 arithmetic (5.3 and 6.0+)."""
    major, minor = parse_compute_version(compute_version)
    return (major == 5 and minor == 3) or major >= 6


def have_int8(compute_version) -> bool:
    """Whether int8 dot-product instructions exist (6.0+)."""
    major, _ = parse_compute_version(compute_version)
    return major >= 6


def have_tensorcore(compute_version=None, target=None) -> bool:
    """Whether tensor cores exist (7.x)."""
    if compute_version is None:
        return False
    major, _ = parse_compute_version(compute_version)
    return major >= 7


def have_bf16(compute_version) -> bool:
    """Whether bfloat16 arithmetic exists (8.0+)."""
    major, _ = parse_compute_version(compute_version)
    return major >= 8
