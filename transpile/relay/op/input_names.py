"""TVM v0.19's Python parameter names of operator inputs, for builders called with inputs by keyword.

`relay.take(data=x, indices=i)` and `relay.nn.dense(x, weight=w)` worked in TVM because its
builders were plain Python functions; ours are registry entries, so each multi-input operator's
input names are listed here (single-input operators take `data`, binary elementwise ones
`lhs`/`rhs`, by OpDef.input_names' conventions). A family can still override an entry with
extras["input_names"].
"""

from __future__ import annotations

__all__ = ["TVM_INPUT_NAMES"]

_DATA_WEIGHT = ("data", "weight")

TVM_INPUT_NAMES: dict[str, tuple[str, ...]] = {
    # transform
    "where": ("condition", "x", "y"),
    "take": ("data", "indices"),
    "gather_nd": ("data", "indices"),
    "scatter_nd": ("data", "indices", "updates"),
    "scatter_elements": ("data", "indices", "updates"),
    "reshape_like": ("data", "shape_like"),
    "slice_like": ("data", "shape_like"),
    "collapse_sum_like": ("data", "collapse_type"),
    "unravel_index": ("indices", "shape"),
    "one_hot": ("indices", "on_value", "off_value"),
    "dyn.broadcast_to": ("data", "shape"),
    "searchsorted": ("sorted_sequence", "values"),
    # nn
    "nn.conv1d": _DATA_WEIGHT,
    "nn.conv2d": _DATA_WEIGHT,
    "nn.conv3d": _DATA_WEIGHT,
    "nn.conv1d_transpose": _DATA_WEIGHT,
    "nn.conv2d_transpose": _DATA_WEIGHT,
    "nn.conv3d_transpose": _DATA_WEIGHT,
    "nn.contrib_conv2d_NCHWc": ("data", "kernel"),
    "nn.dense": _DATA_WEIGHT,
    "nn.contrib_dense_pack": _DATA_WEIGHT,
    "nn.matmul": ("tensor_a", "tensor_b"),
    "nn.batch_matmul": ("tensor_a", "tensor_b"),
    "nn.bias_add": ("data", "bias"),
    "nn.prelu": ("data", "alpha"),
    "nn.batch_norm": ("data", "gamma", "beta", "moving_mean", "moving_var"),
    "nn.layer_norm": ("data", "gamma", "beta"),
    "nn.instance_norm": ("data", "gamma", "beta"),
    "nn.group_norm": ("data", "gamma", "beta"),
    "image.grid_sample": ("data", "grid"),
}
