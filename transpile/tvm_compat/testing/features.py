"""`tvm.testing.requires_*` / `uses_*` decorators: a test needing what this machine lacks is skipped.

transpile runs every program on the host CPU, so the CPU-side features (llvm, x86 where the
machine is one) are available and every accelerator or vendor library is not. `uses_gpu` marks a
test that also runs without a GPU: it runs here, on the CPU.
"""

from __future__ import annotations

import functools
import importlib.util
import platform

import pytest

__all__ = ["Feature", "feature", "requires_package", "skip_reason"]


def skip_reason(long_name: str) -> str:
    return f"needs {long_name}, which transpile (host CPU only) does not provide"


class Feature:
    """A capability tests may need; calling it decorates a test (skip where missing)."""

    _all: dict[str, "Feature"] = {}

    def __init__(self, name: str, long_name: str | None = None, available: bool = False):
        self.name = name
        self.long_name = long_name or name
        self.available = available
        Feature._all[name] = self

    def marks(self, support_required: str = "required") -> list:
        """The pytest marks applying this requirement (none when the feature is optional or present)."""
        if support_required == "optional" or self.available:
            return []
        return [pytest.mark.skip(reason=skip_reason(self.long_name))]

    def __call__(self, func=None, *, support_required: str = "required"):
        if support_required not in ("required", "optional"):
            raise ValueError(f"support_required must be 'required' or 'optional', got {support_required!r}")
        if func is None:
            return functools.partial(self.__call__, support_required=support_required)
        for mark in self.marks(support_required):
            func = mark(func)
        return func


def _is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


# (name, long name, available here)
_FEATURES = [
    ("llvm", "LLVM", True),
    ("x86", "x86-64 CPU", _is_x86()),
    ("gpu", "a GPU", False),
    ("multi_gpu", "several GPUs", False),
    ("cuda", "CUDA", False),
    ("tensorcore", "Tensor Cores", False),
    ("cudnn", "cuDNN", False),
    ("cublas", "cuBLAS", False),
    ("nccl", "NCCL", False),
    ("nvptx", "NVPTX", False),
    ("cudagraph", "CUDA Graph", False),
    ("opencl", "OpenCL", False),
    ("rocm", "ROCm", False),
    ("matrixcore", "AMD Matrix Core", False),
    ("hipblas", "hipBLAS", False),
    ("metal", "Metal", False),
    ("vulkan", "Vulkan", False),
    ("openclml", "OpenCLML", False),
    ("nnapi", "NNAPI", False),
    ("cutlass", "CUTLASS", False),
    ("rpc", "TVM's RPC runtime", False),
    ("libtorch", "LibTorch", False),
    ("mrvl", "Marvell", False),
    ("hexagon", "Hexagon", False),
    ("vitis_ai", "Vitis AI", False),
    ("arm_dot", "ARM dot-product instructions", False),
    ("arm_fp16", "ARM fp16 instructions", False),
    ("aprofile_aem_fvp", "Arm(R) Fixed Virtual Platform", False),
    ("corstone300", "Corstone-300", False),
    ("ethosn", "Arm(R) Ethos(TM)-N", False),
    ("ethosu", "Arm(R) Ethos(TM)-U", False),
    ("micro", "microTVM", False),
    ("usmp", "unified static memory planning", False),
    ("cmsisnn", "CMSIS-NN", False),
    ("dnnl", "oneDNN", False),
    ("miopen", "MIOpen", False),
    ("rocblas", "rocBLAS", False),
    ("sort", "TVM's contrib sort", False),
    ("tensorrt", "TensorRT", False),
    ("openmp", "OpenMP runtime of TVM", False),
]
FEATURES = {name: Feature(name, long_name, available) for name, long_name, available in _FEATURES}


def feature(name: str) -> Feature:
    """The Feature called `name`; one this table does not know is missing here."""
    found = Feature._all.get(name)
    return found if found is not None else Feature(name, name, False)


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        return False


def requires_package(*packages):
    """Skips a test when one of the Python packages is not installed."""
    missing = [name for name in packages if not _installed(name)]

    def decorate(func):
        if missing:
            return pytest.mark.skip(reason=f"needs the Python package(s) {', '.join(missing)}")(func)
        return func

    return decorate
