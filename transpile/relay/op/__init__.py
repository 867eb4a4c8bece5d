"""Operator registry and operator families (see registry.py); as tvm.relay.op also every operator builder.

`relay.op.get(name)` is TVM's: the `Op` node (registry entries are `registry.get`/`lookup`). The
builders (`relay.op.add`, `relay.op.nn.conv2d`, ...) are installed by `transpile.relay` on import.
"""

from .registry import OpDef, OpPattern, AttrField, REQUIRED, RelationError, lookup, registered_ops, make_call  # noqa: F401
from .op import get, register, register_gradient, register_pattern, register_stateful  # noqa: F401
