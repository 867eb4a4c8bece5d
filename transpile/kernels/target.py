"""The compilation targets: the host CPU with its vector ISA (LLVM) and TVM's portable `c` target."""

from __future__ import annotations

import functools
import logging

__all__ = ["host_target", "target_key", "c_target", "vector_lanes", "kernel_target"]

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


_LLVM_OPTIONS = ("mcpu", "mtriple", "mattr", "mabi", "mfloat-abi", "num-cores")


def kernel_target(target=None):
    """The apache-tvm Target kernels are compiled for, from what a user names: None (the host),
    a TVM-style string ("llvm -mcpu=cascadelake -mattr=+avx512bw"), a dict, a tvm_compat Target or
    an apache-tvm Target. An llvm target without -mtriple gets the host's triple (the kernels are
    linked into host code); -mcpu without a triple names a CPU of the host's architecture.
    Compiling for a CPU this machine lacks works; running that code is the caller's risk."""
    import tvm

    if target is None:
        return host_target()
    if isinstance(target, tvm.target.Target):
        return target
    text = str(target).strip() if not isinstance(target, dict) else None
    if text is not None:
        words = text.split()
        kind = words[0] if words else "llvm"
        options = {}
        for word in words[1:]:
            key, _, value = word.lstrip("-").partition("=")
            options[key] = value
    else:
        options = dict(target)
        kind = str(options.pop("kind", "llvm"))
    if kind == "c":
        return c_target()
    if kind not in ("llvm", "cpu"):
        from ..errors import TranspileError

        raise TranspileError(f"kernels run on the host CPU: target {target!r} is not an llvm or c target")
    config = {"kind": "llvm"}
    for key in _LLVM_OPTIONS:
        value = options.get(key)
        if value not in (None, "", True):
            config[key] = [part for part in str(value).split(",") if part] if key == "mattr" else str(value)
    if "mtriple" not in config:
        config["mtriple"] = _attr(host_target(), "mtriple") or "x86_64-unknown-linux-gnu"
        if "mcpu" not in config and "mattr" not in config:
            return host_target()  # plain "llvm": the host CPU, as every backend compiles by default
    return tvm.target.Target(config)


def _attr(target, name: str) -> str:
    try:
        value = target.attrs[name]
    except (KeyError, IndexError):
        return ""
    if value is None:
        return ""
    return ",".join(str(v) for v in value) if not isinstance(value, str) and hasattr(value, "__len__") else str(value)


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
