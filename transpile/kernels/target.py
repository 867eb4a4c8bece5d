"""The compilation targets: the host CPU with its vector ISA (LLVM) and TVM's portable `c` target."""

from __future__ import annotations

import functools
import logging

__all__ = ["host_target", "target_key", "c_target", "vector_lanes"]

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=None)
def host_target():
    """An LLVM target for this machine's CPU (mtriple + mcpu), so kernels use AVX2/AVX-512.

    A plain {"kind": "llvm"} target is generic x86-64 without AVX; it is only the fallback when
    detection fails.
    """
    import tvm

    try:
        from tvm.target.detect_target import detect_target_from_device

        detected = detect_target_from_device(tvm.cpu())
        mtriple = str(detected.attrs["mtriple"])
        mcpu = str(detected.attrs["mcpu"])
        return tvm.target.Target({"kind": "llvm", "mtriple": mtriple, "mcpu": mcpu})
    except Exception as exc:  # detection depends on LLVM knowing the CPU
        log.warning("could not detect the host CPU (%s); kernels are compiled for generic x86-64 without AVX", exc)
        return tvm.target.Target({"kind": "llvm"})


@functools.lru_cache(maxsize=None)
def c_target():
    """TVM's `c` target: portable C kernels for the standalone bundle (no LLVM, no TVM at run time)."""
    import tvm

    return tvm.target.Target({"kind": "c"})


def _attr(target, name: str) -> str:
    try:
        value = target.attrs[name]
    except (KeyError, IndexError):
        return ""
    return str(value) if value is not None else ""


def target_key(target=None) -> str:
    """A stable string naming the target for cache keys, e.g. `llvm;x86_64-conda-linux-gnu;rocketlake`."""
    target = host_target() if target is None else target
    return ";".join([target.kind.name, _attr(target, "mtriple"), _attr(target, "mcpu"), _attr(target, "mattr")])


# Widest vector register in bits for the mcpu names LLVM reports for common x86 cores.
_AVX512_CPUS = (
    "skylake-avx512",
    "cascadelake",
    "cooperlake",
    "cannonlake",
    "icelake",
    "tigerlake",
    "rocketlake",
    "sapphirerapids",
    "emeraldrapids",
    "graniterapids",
    "diamondrapids",
    "znver4",
    "znver5",
    "knl",
    "knm",
)
_AVX2_CPUS = (
    "haswell",
    "broadwell",
    "skylake",
    "alderlake",
    "raptorlake",
    "meteorlake",
    "arrowlake",
    "lunarlake",
    "gracemont",
    "znver1",
    "znver2",
    "znver3",
    "x86-64-v3",
    "kabylake",
    "coffeelake",
    "cometlake",
)


def vector_bits(target=None) -> int:
    """Width of the target's widest vector registers (512, 256 or 128 bits); 0 for the `c` target."""
    target = host_target() if target is None else target
    if target.kind.name != "llvm":
        return 0
    mcpu = _attr(target, "mcpu")
    mattr = _attr(target, "mattr")
    if "avx512f" in mattr or mcpu.startswith(_AVX512_CPUS) or mcpu == "x86-64-v4":
        return 512
    if "avx2" in mattr or mcpu.startswith(_AVX2_CPUS):
        return 256
    return 128


def vector_lanes(dtype: str, target=None) -> int:
    """Elements of `dtype` in one vector register of the target (at least 1)."""
    import tvm

    bits = vector_bits(target)
    if bits == 0:
        return 1
    element_bits = max(tvm.runtime.DataType(dtype).bits, 8)
    return max(bits // element_bits, 1)
