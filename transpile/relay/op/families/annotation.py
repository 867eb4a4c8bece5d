"""Annotation operators: identities that carry a hint for the passes (TVM's relay.op.annotation).

- annotation.stop_fusion(data): FuseOps never fuses across it (opaque), then drops it;
- annotation.checkpoint(data): a rematerialization point for the gradient pass; an identity here;
- annotation.compiler_begin/compiler_end(data, compiler=...): the bounds of a region meant for an
  external compiler (BYOC). No partitioning pass uses them here, so they evaluate as identities.
Each one is opaque, as in TVM, so a backend computes it as a kernel of its own that copies its
input; the operators exist so that programs written with them type-check, print, parse and run.
"""

from __future__ import annotations

import numpy as np

from ...ty import TensorType
from ..registry import AttrField, OpDef, OpPattern, register
from .support import tensor_args
from .te_support import map_compute

__all__ = ["ANNOTATION_OPS"]


def _identity_rel(op_name):
    def rel(arg_types, attrs):
        (data,) = tensor_args(arg_types, 1, op_name, ["data"])
        return TensorType(data.shape, data.dtype)

    return rel


def _identity_impl(args, attrs, out_type):
    return np.array(args[0], copy=True)


def _identity_te(op_name):
    short = op_name.split(".")[-1]

    def te_impl(inputs, attrs, out_type):
        return map_compute(inputs[0], lambda value: value, f"T_{short}")

    return te_impl


def _compiler_name(value) -> str:
    return str(value)


_DESCRIPTIONS = {
    "annotation.stop_fusion": "Annotate an expression to prevent it being fused with following expressions.",
    "annotation.checkpoint": "Mark a checkpoint for the checkpointing memory optimization.",
    "annotation.compiler_begin": "Beginning of a region that is handled by the given compiler.",
    "annotation.compiler_end": "End of a region that is handled by the given compiler.",
}

ANNOTATION_OPS = tuple(_DESCRIPTIONS)

for _name, _description in _DESCRIPTIONS.items():
    _attrs = (AttrField("compiler", convert=_compiler_name, doc="the external compiler"),) if "compiler_" in _name else ()
    register(
        OpDef(
            name=_name,
            num_inputs=1,
            type_rel=_identity_rel(_name),
            pattern=OpPattern.OPAQUE,
            numpy_impl=_identity_impl,
            attrs=_attrs,
            te_impl=_identity_te(_name),
            description=_description,
            extras={"input_names": ("data",)},
        )
    )
