"""PyTorch programs into Relay (`torch.export` → core ATen → Relay), as TVM's `relay.frontend.from_pytorch`.

torch is an optional extra: nothing here imports it until an importer is called.
"""

from .converters import supported_ops
from .importer import from_exported_program, from_pytorch

__all__ = ["from_exported_program", "from_pytorch", "supported_ops"]
