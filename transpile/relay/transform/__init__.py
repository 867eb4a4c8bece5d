"""Relay -> Relay passes under TVM's names (tvm.relay.transform) and the pass infrastructure.

    mod = relay.transform.InferType()(mod)
    with relay.transform.PassContext(opt_level=3):
        mod = relay.transform.Sequential([relay.transform.SimplifyInference(),
                                          relay.transform.FoldConstant()])(mod)
    mod = relay.transform.optimize(mod, opt_level=3)      # the whole graph-level pipeline

One module per pass or family: simplify_inference, fold_constant, fold_scale_axis (backward and
forward), canonicalize_ops, simplify_expr, eliminate_common_subexpr, dead_code, fuse_ops (the
compiler's fusion in TVM's output form), normal_form (ToANormalForm / ToGraphNormalForm), local (InferTypeLocal, AnnotateSpans); infra holds
Pass / PassContext / Sequential, optimize the build order.
"""

from .alter_dense_layout import AlterDenseLayout
from .alter_op_layout import AlterOpLayout
from .canonicalize_ops import CanonicalizeOps
from .dead_code import DeadCodeElimination, RemoveUnusedFunctions
from .eliminate_common_subexpr import EliminateCommonSubexpr
from .fold_constant import FoldConstant, FoldConstantExpr
from .fold_scale_axis import BackwardFoldScaleAxis, FoldScaleAxis, ForwardFoldScaleAxis
from .fuse_ops import FuseOps
from .gradient import FirstOrderGradient, gradient
from .infra import (
    FunctionPass,
    InferType,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    Sequential,
    function_pass,
    module_pass,
)
from .local import AnnotateSpans, InferTypeLocal
from .normal_form import ToANormalForm, ToANormalFormExpr, ToGraphNormalForm
from .optimize import DEFAULT_OPT_LEVEL, optimization_passes, optimize
from .simplify_expr import SimplifyExpr
from .simplify_inference import SimplifyInference

__all__ = [
    "Pass",
    "PassInfo",
    "PassContext",
    "ModulePass",
    "FunctionPass",
    "Sequential",
    "InferType",
    "module_pass",
    "function_pass",
    "SimplifyInference",
    "FoldConstant",
    "FoldConstantExpr",
    "FoldScaleAxis",
    "BackwardFoldScaleAxis",
    "ForwardFoldScaleAxis",
    "CanonicalizeOps",
    "AlterOpLayout",
    "AlterDenseLayout",
    "SimplifyExpr",
    "EliminateCommonSubexpr",
    "DeadCodeElimination",
    "RemoveUnusedFunctions",
    "optimize",
    "optimization_passes",
    "DEFAULT_OPT_LEVEL",
    "gradient",
    "FirstOrderGradient",
    "FuseOps",
    "ToANormalForm",
    "ToANormalFormExpr",
    "ToGraphNormalForm",
    "InferTypeLocal",
    "AnnotateSpans",
]
