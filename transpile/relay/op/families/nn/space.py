"""Moving data between channels and space, and mirror padding: nn.depth_to_space, nn.space_to_depth, nn.mirror_pad.

depth_to_space DCR reads channel (by * block + bx) * C_out + c, CRD reads c * block² + by * block + bx
(PyTorch's pixel_shuffle); space_to_depth is the inverse of DCR. Both are ONNX's operators.
"""

from __future__ import annotations

import numpy as np

from ....ty import AnyDim, TensorType
from ...common import expect_tensor, fmt_type
from ...registry import AttrField, OpPattern, RelationError, register
from ._common import NNOpDef, is_any, layout_positions, to_int, to_int_pairs, to_str
from ..te_support import require
from .te_common import dims, output_shape, permute

_MODES = ("DCR", "CRD")
_MIRROR_MODES = ("REFLECT", "SYMMETRIC")


def _nchw(op_name: str, data: TensorType, attrs) -> list:
    layout_positions(attrs.layout, "NCHW", op_name, "layout")
    if data.ndim != 4:
        raise RelationError(f"{op_name}: data must have rank 4 for layout {attrs.layout}, got {fmt_type(data)}")
    if attrs.block_size < 1:
        raise RelationError(f"{op_name}: block_size must be >= 1, got {attrs.block_size}")
    return [data.shape[attrs.layout.index(a)] for a in "NCHW"]


def _depth_to_space_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.depth_to_space", "data")
    n, c, h, w = _nchw("nn.depth_to_space", data, attrs)
    if attrs.mode not in _MODES:
        raise RelationError(f"nn.depth_to_space: mode must be DCR or CRD, got {attrs.mode!r}")
    block = attrs.block_size
    if not is_any(c) and c % (block * block):
        raise RelationError(
            f"nn.depth_to_space: the {c} channels of {fmt_type(data)} are not divisible by "
            f"block_size² ({block * block})"
        )
    out = {"N": n, "C": AnyDim() if is_any(c) else c // (block * block)}
    out.update({axis: AnyDim() if is_any(size) else size * block for axis, size in (("H", h), ("W", w))})
    return TensorType([out[a] for a in attrs.layout], data.dtype)


def _space_to_depth_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.space_to_depth", "data")
    n, c, h, w = _nchw("nn.space_to_depth", data, attrs)
    block = attrs.block_size
    for axis, size in (("H", h), ("W", w)):
        if not is_any(size) and size % block:
            raise RelationError(
                f"nn.space_to_depth: the {axis} dimension ({size}) of {fmt_type(data)} is not divisible by "
                f"block_size ({block})"
            )
    out = {"N": n, "C": AnyDim() if is_any(c) else c * block * block}
    out.update({axis: AnyDim() if is_any(size) else size // block for axis, size in (("H", h), ("W", w))})
    return TensorType([out[a] for a in attrs.layout], data.dtype)


def _depth_to_space_impl(args, attrs, out_type):
    x = np.transpose(args[0], [attrs.layout.index(a) for a in "NCHW"])
    n, c, h, w = x.shape
    b = attrs.block_size
    if attrs.mode == "DCR":
        moved = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        moved = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    out = moved.reshape(n, c // (b * b), h * b, w * b)
    return np.ascontiguousarray(np.transpose(out, ["NCHW".index(a) for a in attrs.layout]))


def _space_to_depth_impl(args, attrs, out_type):
    x = np.transpose(args[0], [attrs.layout.index(a) for a in "NCHW"])
    n, c, h, w = x.shape
    b = attrs.block_size
    moved = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    out = moved.reshape(n, c * b * b, h // b, w // b)
    return np.ascontiguousarray(np.transpose(out, ["NCHW".index(a) for a in attrs.layout]))


def _nchw_out_shape(out_type, layout: str, data_nchw, op_name: str) -> list:
    """The output extents in NCHW order; a `?` batch is the input's."""
    shape = output_shape(out_type, {layout.index("N"): dims(data_nchw)[0]}, op_name)
    return [shape[layout.index(a)] for a in "NCHW"]


def _depth_to_space_te(inputs, attrs, out_type):
    from tvm import te

    data = permute(inputs[0], attrs.layout, "NCHW")
    b = attrs.block_size
    channels = dims(data)[1] // (b * b)
    shape = _nchw_out_shape(out_type, attrs.layout, data, "nn.depth_to_space")

    def element(n, c, y, x):
        offset = (y % b) * b + x % b
        source = offset * channels + c if attrs.mode == "DCR" else c * b * b + offset
        return data(n, source, y // b, x // b)

    out = te.compute(shape, element, name="T_depth_to_space", tag="injective")
    return permute(out, "NCHW", attrs.layout)


def _space_to_depth_te(inputs, attrs, out_type):
    from tvm import te

    data = permute(inputs[0], attrs.layout, "NCHW")
    b = attrs.block_size
    channels = dims(data)[1]
    shape = _nchw_out_shape(out_type, attrs.layout, data, "nn.space_to_depth")

    def element(n, c, y, x):
        offset = c // channels
        return data(n, c % channels, y * b + offset // b, x * b + offset % b)

    out = te.compute(shape, element, name="T_space_to_depth", tag="injective")
    return permute(out, "NCHW", attrs.layout)


def _mirror_pad_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.mirror_pad", "data")
    if attrs.mode not in _MIRROR_MODES:
        raise RelationError(f"nn.mirror_pad: mode must be REFLECT or SYMMETRIC, got {attrs.mode!r}")
    if len(attrs.pad_width) != data.ndim:
        raise RelationError(
            f"nn.mirror_pad: pad_width has {len(attrs.pad_width)} pairs but data {fmt_type(data)} has "
            f"{data.ndim} dimensions"
        )
    # One reflection only (as TVM and TensorFlow): REFLECT skips the edge, so it can mirror dim - 1.
    limit_text = "dim - 1 (REFLECT)" if attrs.mode == "REFLECT" else "dim (SYMMETRIC)"
    shape = []
    for i, (dim, pair) in enumerate(zip(data.shape, attrs.pad_width)):
        if len(pair) != 2 or min(pair) < 0:
            raise RelationError(f"nn.mirror_pad: pad_width[{i}] must be a pair of widths >= 0, got {list(pair)}")
        if is_any(dim):
            shape.append(AnyDim())
            continue
        limit = dim - 1 if attrs.mode == "REFLECT" else dim
        if max(pair) > limit:
            raise RelationError(
                f"nn.mirror_pad: pad_width[{i}] = {list(pair)} mirrors more than {limit_text} = {limit} values of "
                f"dimension {i} of {fmt_type(data)}"
            )
        shape.append(dim + pair[0] + pair[1])
    return TensorType(shape, data.dtype)


def _mirror_pad_impl(args, attrs, out_type):
    mode = "reflect" if attrs.mode == "REFLECT" else "symmetric"
    for axis, (dim, pair) in enumerate(zip(np.shape(args[0]), attrs.pad_width)):
        limit = dim - 1 if attrs.mode == "REFLECT" else dim  # the relation's one reflection, for `?` dims
        if max(pair) > limit:
            raise ValueError(f"nn.mirror_pad: pad_width {list(pair)} mirrors more than {limit} values of axis {axis}")
    return np.pad(args[0], [tuple(pair) for pair in attrs.pad_width], mode=mode)


def _mirror_pad_te(inputs, attrs, out_type):
    from tvm import topi

    before = [pair[0] for pair in attrs.pad_width]
    after = [pair[1] for pair in attrs.pad_width]
    for axis, (dim, pair) in enumerate(zip(inputs[0].shape, attrs.pad_width)):
        limit = dim - 1 if attrs.mode == "REFLECT" else dim  # the relation checked static dims
        require(limit >= max(pair), f"nn.mirror_pad: pad_width[{axis}] mirrors more values than axis {axis} has")
    return topi.nn.mirror_pad(inputs[0], before, after, mode=attrs.mode, name="T_mirror_pad")


_LAYOUT = AttrField("layout", "NCHW", to_str, "a permutation of NCHW")
register(
    NNOpDef(
        "nn.depth_to_space",
        1,
        _depth_to_space_rel,
        OpPattern.INJECTIVE,
        _depth_to_space_impl,
        te_impl=_depth_to_space_te,
        attrs=(AttrField("block_size", 1, to_int), _LAYOUT, AttrField("mode", "DCR", to_str, "DCR or CRD")),
        description="Rearrange blocks of channels into block_size x block_size spatial tiles.",
    )
)
register(
    NNOpDef(
        "nn.space_to_depth",
        1,
        _space_to_depth_rel,
        OpPattern.INJECTIVE,
        _space_to_depth_impl,
        te_impl=_space_to_depth_te,
        attrs=(AttrField("block_size", 1, to_int), _LAYOUT),
        description="Rearrange block_size x block_size spatial tiles into channels (inverse of DCR depth_to_space).",
    )
)
register(
    NNOpDef(
        "nn.mirror_pad",
        1,
        _mirror_pad_rel,
        OpPattern.INJECTIVE,
        _mirror_pad_impl,
        te_impl=_mirror_pad_te,
        attrs=(
            AttrField("mode", "SYMMETRIC", to_str, "REFLECT (edge not repeated) or SYMMETRIC (edge repeated)"),
            AttrField("pad_width", convert=to_int_pairs, doc="((before, after), ...) per dimension"),
        ),
        extras={"builder_params": ("pad_width", "mode")},
        description="Pad every dimension with a mirror image of the data next to the edge.",
    )
)
