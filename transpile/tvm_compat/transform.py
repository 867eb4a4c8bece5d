"""TVM's `tvm.transform`: the pass infrastructure, which is relay.transform's (one implementation)."""

from ..relay.transform import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    Sequential,
    function_pass,
    module_pass,
)

__all__ = [
    "Pass",
    "PassInfo",
    "PassContext",
    "ModulePass",
    "FunctionPass",
    "Sequential",
    "module_pass",
    "function_pass",
]
