"""torch, torchvision and transformers for tests and benchmarks, also where the torchvision wheel's C++ ops cannot load."""

from __future__ import annotations

import sys

_torchvision_stub = None  # keeps the stub operator library alive for the process


def import_torchvision():
    """`torchvision`, importable even when its ops library does not load (the registry's wheel is a CUDA build).

    Without its ops library, `import torchvision` fails while registering fake kernels for
    `torchvision::nms`/`qnms`, which only that library declares. Declaring the two schemas lets the
    pure-Python model definitions import; the models never call those operators. transformers
    imports torchvision too, so call this before importing transformers.
    """
    global _torchvision_stub
    import torch

    try:
        import torchvision
    except RuntimeError as exc:
        if "torchvision::nms" not in str(exc) or _torchvision_stub is not None:
            raise
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]  # the half-imported package; import it again after the stub
        _torchvision_stub = torch.library.Library("torchvision", "DEF")
        for op in ("nms", "qnms"):
            _torchvision_stub.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        import torchvision
    return torchvision


def import_transformers():
    """`transformers`, after making torchvision importable (transformers imports it)."""
    import_torchvision()
    import transformers

    return transformers
