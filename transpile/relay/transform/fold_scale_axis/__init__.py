"""FoldScaleAxis: fold per-channel multiplies into conv2d / dense weights (TVM's fold_scale_axis.cc).

BackwardFoldScaleAxis pushes a scale applied after a conv2d / dense (what SimplifyInference leaves
of a batch norm) into the weights; ForwardFoldScaleAxis does the same for a scale applied to the
input. FoldScaleAxis runs both, then FoldConstant to compute the new weights.
"""

from __future__ import annotations

from ..fold_constant import FoldConstant
from ..infra import FunctionPass, Sequential
from .backward import backward_fold_scale_axis
from .forward import forward_fold_scale_axis

__all__ = [
    "FoldScaleAxis",
    "BackwardFoldScaleAxis",
    "ForwardFoldScaleAxis",
    "backward_fold_scale_axis",
    "forward_fold_scale_axis",
]


def BackwardFoldScaleAxis():
    """TVM's BackwardFoldScaleAxis pass (opt_level 3)."""
    return FunctionPass(lambda func, mod, ctx: backward_fold_scale_axis(func), 3, "BackwardFoldScaleAxis")


def ForwardFoldScaleAxis():
    """TVM's ForwardFoldScaleAxis pass (opt_level 3)."""
    return FunctionPass(lambda func, mod, ctx: forward_fold_scale_axis(func), 3, "ForwardFoldScaleAxis")


def FoldScaleAxis():
    """Backward, then forward folding, then FoldConstant (a Sequential named FoldScaleAxis, as in TVM)."""
    return Sequential([BackwardFoldScaleAxis(), ForwardFoldScaleAxis(), FoldConstant()], name="FoldScaleAxis")
