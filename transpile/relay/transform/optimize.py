"""The graph-level optimisation pipeline run before normalization (TVM's build pass prefix).

The order follows TVM's GetPassPrefix (relay/backend/utils.cc), minus what we do not have
(Legalize, CombineParallel*, FastMath), plus a final DeadCodeElimination:

    SimplifyInference (0) · EliminateCommonSubexpr (3) · FoldConstant (2) · FoldScaleAxis (3:
    backward, forward, FoldConstant) · CanonicalizeOps (3) · SimplifyExpr (0) ·
    [AlterOpLayout (3) · AlterDenseLayout (3)] · FoldConstant (2) · DeadCodeElimination (1)

AlterOpLayout (channel-blocked NCHWc convolutions) and AlterDenseLayout (dense on column-blocked
weights), with the weights re-packed by the FoldConstant after them, run only when asked (`alter_layout=True`): backends whose kernels TVM compiles want it; the
numpy kernels of the Python backend and the interpreter would only pay for the packing.

CanonicalizeOps comes before SimplifyExpr here (TVM: after), so that the add a bias_add becomes
merges with the add left by a folded batch norm: (conv + shift) + bias -> conv + (shift + bias).

Each pass runs when the PassContext's opt_level reaches its own (in parentheses) and it is not
disabled. Unlike TVM, opt_level 0 runs nothing at all, so `opt_level=0` compiles the program as
written.
"""

from __future__ import annotations

from ..deep import run_deep
from ..module import IRModule
from .alter_dense_layout import AlterDenseLayout
from .alter_op_layout import AlterOpLayout
from .canonicalize_ops import CanonicalizeOps
from .dead_code import DeadCodeElimination
from .eliminate_common_subexpr import EliminateCommonSubexpr
from .fold_constant import FoldConstant
from .fold_scale_axis import FoldScaleAxis
from .infra import PassContext, Sequential
from .simplify_expr import SimplifyExpr
from .simplify_inference import SimplifyInference

__all__ = ["optimization_passes", "optimize", "DEFAULT_OPT_LEVEL"]

# The fastest level, TVM's usual build level (tvmc's default).
DEFAULT_OPT_LEVEL = 3


def optimization_passes(alter_layout: bool = False) -> Sequential:
    """The passes `optimize` runs, in order, as one Sequential."""
    return Sequential(
        [
            SimplifyInference(),
            EliminateCommonSubexpr(),
            FoldConstant(),
            FoldScaleAxis(),
            CanonicalizeOps(),
            SimplifyExpr(),
            *([AlterOpLayout(), AlterDenseLayout()] if alter_layout else []),
            FoldConstant(),
            DeadCodeElimination(),
        ],
        name="GraphOptimization",
    )


def optimize(
    mod: IRModule,
    opt_level: int = DEFAULT_OPT_LEVEL,
    *,
    alter_layout: bool = False,
    required_pass=(),
    disabled_pass=(),
) -> IRModule:
    """`mod` after the graph-level passes enabled at `opt_level` (0: `mod` itself, unchanged);
    `alter_layout` adds AlterOpLayout (packed NCHWc convolutions) and AlterDenseLayout (pre-packed
    dense weights) for TVM-compiled kernels.

    Passes required or disabled by the enclosing PassContext (`with PassContext(disabled_pass=[...])`)
    stay required or disabled.
    """
    if opt_level <= 0:
        return mod
    outer = PassContext.current()
    context = PassContext(
        opt_level=opt_level,
        required_pass=[*outer.required_pass, *required_pass],
        disabled_pass=[*outer.disabled_pass, *disabled_pass],
        config=outer.config,
    )
    return run_deep(_run_passes, mod, context, alter_layout)


def _run_passes(mod: IRModule, context: PassContext, alter_layout: bool) -> IRModule:
    """All passes on one big-stack thread (run_deep), rather than a thread per pass."""
    with context:
        return optimization_passes(alter_layout)(mod)
