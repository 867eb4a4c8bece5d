"""Converter of ONNX Dropout: the identity at inference, with an all-kept mask."""

from __future__ import annotations

import numpy as np

from ..converters import converter


@converter("Dropout")
def dropout(ctx):
    b = ctx.b
    data = ctx.input(0)
    training = False
    if ctx.opset >= 12:
        mode = ctx.input_value(2, "the training_mode input of Dropout")
        training = mode is not None and bool(np.asarray(mode).reshape(-1)[0])
        ratio = ctx.input_value(1, "the ratio input of Dropout")
        ratio = 0.5 if ratio is None else float(np.asarray(ratio).reshape(-1)[0])
    else:
        # Before opset 7 is_test=0 meant training; opsets 7-11 only describe inference.
        training = ctx.opset < 7 and not ctx.attr("is_test", 0)
        ratio = float(ctx.attr("ratio", 0.5))
    if training and ratio != 0.0:
        raise ctx.unsupported(f"training mode with ratio {ratio} (random masks are not computed)")
    outputs = [data]
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        # The mask is bool from opset 10; before, it has the data's type.
        mask_dtype = "bool" if ctx.opset >= 10 else b.dtype_of(data)
        outputs.append(b.call("cast", b.call("ones_like", data), dtype=mask_dtype))
    return outputs
