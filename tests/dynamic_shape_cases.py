"""The table of tests/test_dynamic_shape_checks.py: operator calls whose `?` dims break the type relation at run time.

Parameter types are written F(...) (float32), I(...) (int32) and B(...) (bool); a case is one
operator called on its parameters, with run-time arguments chosen to violate one condition of the
operator's type relation (`kind`). `rejected=False` marks the few cases that look like violations
but are defined (numpy clips, pads or returns an empty part): there every backend must agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from transpile.relay.op.registry import registered_ops

__all__ = ["Case", "CASES", "NO_RUNTIME_CONDITION", "case_ids"]

_DTYPES = {"F": "float32", "I": "int32", "B": "bool"}


@dataclass
class Case:
    op: str
    kind: str
    params: str
    body: str
    args: list = field(repr=False)
    ret: str = ""
    rejected: bool = True

    @property
    def label(self) -> str:
        return f"{self.op}[{self.kind}]"

    def _params(self) -> str:
        return _expand_types(self.params)

    def _ret(self) -> str:
        return f" -> {_expand_types(self.ret)}" if self.ret else ""

    def module_text(self) -> str:
        return f"def @main({self._params()}){self._ret()} {{ {self.body} }}"

    def closure_text(self) -> str:
        return f"fn ({self._params()}){self._ret()} {{ {self.body} }}"


def _expand_types(text: str) -> str:
    return re.sub(r"\b([FIB])\(([^)]*)\)", lambda m: f"Tensor[({m.group(2)}), {_DTYPES[m.group(1)]}]", text)


def case_ids(cases) -> list[str]:
    return [case.label for case in cases]


def f(*shape, start=1.0):
    """Small distinct float32 values (exact in every backend's arithmetic)."""
    size = int(np.prod(shape, dtype=np.int64))
    return (np.arange(size, dtype=np.float32) % 7 + start).reshape(shape)


def i(values):
    return np.asarray(values, dtype=np.int32)


# ---------------------------------------------------------------- broadcasting binary operators, from the registry

_SPECIAL_BROADCAST = {"nn.bias_add", "nn.prelu", "broadcast_to_like", "dyn.broadcast_to"}


def _broadcast_cases() -> list[Case]:
    cases = []
    for opdef in sorted(registered_ops(), key=lambda d: d.name):
        if opdef.pattern.name != "BROADCAST" or opdef.num_inputs != 2 or opdef.name in _SPECIAL_BROADCAST:
            continue
        name = opdef.name
        if name.startswith(("bitwise", "left_shift", "right_shift")):
            kind, args = "I", [i([1, 2, 3]), i([1, 2, 3, 1])]
        elif name.startswith("logical"):
            kind, args = "B", [np.array([True, False, True]), np.array([True, True, False, False])]
        else:
            kind, args = "F", [f(3), f(4)]
        cases.append(Case(name, "broadcast 3 vs 4", f"%a: {kind}(?), %b: {kind}(?)", f"{name}(%a, %b)", args))
    return cases


# ---------------------------------------------------------------- every other operator with a run-time condition

_TABLE = [
    # broadcasting and per-channel operands
    Case("where", "broadcast 3 vs 4", "%c: B(?), %a: F(?), %b: F(?)", "where(%c, %a, %b)",
         [np.array([True, False, True]), f(4), f(3)]),
    Case("nn.bias_add", "bias length 1 for 3 channels", "%a: F(2, ?), %b: F(?)", "nn.bias_add(%a, %b)", [f(2, 3), f(1)]),
    Case("nn.bias_add", "bias length 2 for 3 channels", "%a: F(2, ?), %b: F(?)", "nn.bias_add(%a, %b)", [f(2, 3), f(2)]),
    Case("nn.prelu", "alpha length 1 for 3 channels", "%a: F(2, ?), %b: F(?)", "nn.prelu(%a, %b)", [f(2, 3), f(1)]),
    Case("nn.prelu", "alpha length 2 for 3 channels", "%a: F(2, ?), %b: F(?)", "nn.prelu(%a, %b)", [f(2, 3), f(2)]),
    Case("broadcast_to_like", "3 to 4", "%a: F(?), %b: F(?)", "broadcast_to_like(%a, %b)", [f(3), f(4)]),
    Case("broadcast_to", "3 to 4", "%a: F(?)", "broadcast_to(%a, shape=[4])", [f(3)]),
    Case("dyn.broadcast_to", "3 to 4", "%a: F(?), %s: I(1)", "dyn.broadcast_to(%a, %s)", [f(3), i([4])]),
    Case("collapse_sum_like", "to a longer shape", "%a: F(?, 3), %b: F(?)", "collapse_sum_like(%a, %b)", [f(2, 3), f(4)]),
    Case("variance", "mean of other rows", "%a: F(?, 3), %m: F(?, 1)", "variance(%a, %m, axis=[1])", [f(2, 3), f(3, 1)]),
    # reductions of nothing
    Case("max", "empty axis", "%a: F(?)", "max(%a)", [f(0)], rejected=False),
    Case("min", "empty axis", "%a: F(2, ?)", "min(%a, axis=[1])", [f(2, 0)], rejected=False),
    Case("argmax", "empty axis", "%a: F(?)", "argmax(%a)", [f(0)]),
    Case("argmin", "empty axis", "%a: F(2, ?)", "argmin(%a, axis=[1])", [f(2, 0)]),
    # reshapes and splits
    Case("reshape", "5 elements to (2, 3)", "%a: F(?)", "reshape(%a, newshape=[2, 3])", [f(5)]),
    Case("reshape", "4 elements to a static (3)", "%a: F(?)", "reshape(%a, newshape=[3])", [f(4)], ret="F(3)"),
    Case("reshape", "5 elements to (-1, 2)", "%a: F(?)", "reshape(%a, newshape=[-1, 2])", [f(5)]),
    Case("contrib_reverse_reshape", "5 elements to (-1, 2) reversed", "%a: F(?)",
         "contrib_reverse_reshape(%a, newshape=[-1, 2])", [f(5)]),
    Case("reshape_like", "5 elements like (2, 3)", "%a: F(?), %b: F(2, ?)", "reshape_like(%a, %b)", [f(5), f(2, 3)]),
    Case("squeeze", "a `?` dim of 2", "%a: F(?, 3)", "squeeze(%a, axis=[0])", [f(2, 3)]),
    Case("split", "3 into 2 sections", "%a: F(?)", "split(%a, indices_or_sections=2)", [f(3)]),
    Case("split", "indices past the end", "%a: F(?)", "split(%a, indices_or_sections=[1, 5])", [f(3)]),
    Case("strided_slice", "end past the end", "%a: F(?)", "strided_slice(%a, begin=[1], end=[5])", [f(3)], rejected=False),
    Case("strided_slice", "begin past the end", "%a: F(?)", "strided_slice(%a, begin=[4], end=[6])", [f(3)],
         rejected=False),
    Case("strided_slice", "negative stride from past the end", "%a: F(?)",
         "strided_slice(%a, begin=[7], end=[-9], strides=[-2])", [f(5)], rejected=False),
    Case("layout_transform", "6 channels in blocks of 4", "%a: F(1, ?, 2, 2)",
         'layout_transform(%a, src_layout="NCHW", dst_layout="NCHW4c")', [f(1, 6, 2, 2)]),
    Case("nn.depth_to_space", "6 channels for block 2", "%a: F(1, ?, 2, 2)", "nn.depth_to_space(%a, block_size=2)",
         [f(1, 6, 2, 2)]),
    Case("nn.space_to_depth", "height 3 for block 2", "%a: F(1, 1, ?, 2)", "nn.space_to_depth(%a, block_size=2)",
         [f(1, 1, 3, 2)]),
    Case("nn.mirror_pad", "reflect pad 3 of length 2", "%a: F(?)", 'nn.mirror_pad(%a, pad_width=[[3, 3]], mode="REFLECT")',
         [f(2)]),
    Case("image.affine_grid", "theta of 3 rows", "%a: F(1, ?, 3)", "image.affine_grid(%a, target_shape=[2, 2])",
         [f(1, 3, 3)]),
    Case("image.grid_sample", "batch 2 vs 1", "%a: F(?, 1, 3, 3), %g: F(?, 2, 2, 2)", "image.grid_sample(%a, %g)",
         [f(2, 1, 3, 3), np.zeros((1, 2, 2, 2), np.float32)]),
    # tuples of tensors
    Case("concatenate", "rows of 2 and 3 columns", "%a: F(2, ?), %b: F(2, ?)", "concatenate((%a, %b), axis=0)",
         [f(2, 2), f(2, 3)]),
    Case("stack", "lengths 3 and 4", "%a: F(?), %b: F(?)", "stack((%a, %b))", [f(3), f(4)]),
    Case("einsum", "k of 3 vs 4", "%a: F(2, ?), %b: F(?, 2)", 'einsum((%a, %b), equation="ij,jk->ik")', [f(2, 3), f(4, 2)]),
    Case("adv_index", "indices 2 vs 3", "%a: F(?, 3), %i: I(?), %j: I(?)", "adv_index((%a, %i, %j))",
         [f(2, 3), i([0, 1]), i([0, 1, 2])]),
    Case("adv_index", "index out of range", "%a: F(?, 3), %i: I(?)", "adv_index((%a, %i))", [f(2, 3), i([0, 5])],
         rejected=False),
    # indexing by data
    Case("take", "index past the end (clip)", "%a: F(?), %i: I(?)", "take(%a, %i, axis=0)", [f(2), i([0, 5])],
         rejected=False),
    Case("take", "from an empty axis", "%a: F(?), %i: I(?)", "take(%a, %i, axis=0)", [f(0), i([0, 3])]),
    Case("gather", "indices wider than data", "%a: F(2, ?), %i: I(1, ?)", "gather(%a, %i, axis=0)",
         [f(2, 3), i([[0, 1, 0, 1]])]),
    Case("gather_nd", "index out of range", "%a: F(?, 3), %i: I(2, ?)", "gather_nd(%a, %i)", [f(2, 3), i([[0, 7], [1, 1]])],
         rejected=False),
    Case("scatter_elements", "index out of range", "%a: F(?, 3), %i: I(?, 3), %u: F(?, 3)",
         "scatter_elements(%a, %i, %u, axis=0)", [f(2, 3), i([[0, 9, 1]]), f(1, 3)], rejected=False),
    Case("scatter_elements", "updates smaller than indices", "%a: F(?, 3), %i: I(?, 3), %u: F(?, 3)",
         "scatter_elements(%a, %i, %u, axis=0)", [f(2, 3), i([[0, 1, 1], [1, 0, 0]]), f(1, 3)]),
    Case("scatter_nd", "index out of range", "%a: F(?), %i: I(1, ?), %u: F(?)", "scatter_nd(%a, %i, %u)",
         [f(3), i([[0, 8]]), f(2)], rejected=False),
    Case("unravel_index", "index past the shape", "%a: I(?), %s: I(2)", "unravel_index(%a, %s)", [i([30]), i([2, 3])],
         rejected=False),
    Case("slice_like", "like longer than data", "%a: F(?, 3), %b: F(?, 3)", "slice_like(%a, %b)", [f(2, 3), f(4, 3)],
         rejected=False),
    Case("searchsorted", "batch 2 vs 3", "%s: F(?, 4), %v: F(?, 2)", "searchsorted(%s, %v)", [f(2, 4), f(3, 2)]),
    Case("topk", "k past the length", "%a: F(?)", "topk(%a, k=5)", [f(3)]),
    Case("sparse_reshape", "3 index columns for 2 dimensions", "%a: I(?, ?), %p: I(?), %n: I(?)",
         "sparse_reshape(%a, %p, %n).0", [i([[0, 0, 1]]), i([2, 3]), i([6])]),
    Case("sparse_to_dense", "2 values for 3 indices", "%a: I(?), %v: F(?), %d: F()",
         "sparse_to_dense(%a, %v, %d, output_shape=[4])", [i([0, 1, 2]), f(2), np.float32(0)]),
    Case("reverse_sequence", "3 lengths for a batch of 2", "%a: F(?, 4), %s: I(?)", "reverse_sequence(%a, %s, seq_axis=1)",
         [f(2, 4), i([1, 2, 3])]),
    Case("sliding_window", "a window of 3 over 2", "%a: F(2, ?)", "sliding_window(%a, axis=1, window_shape=[3], strides=[1])",
         [f(2, 2)]),
    Case("strided_set", "2 begin entries for 1 axis", "%a: F(?), %v: F(?), %b: I(?), %e: I(1), %s: I(1)",
         "strided_set(%a, %v, %b, %e, %s)", [f(4), f(2), i([0, 0]), i([2]), i([1])]),
    # signals
    Case("stft", "a window of 5 for win_length 6", "%a: F(?), %w: F(?)",
         "stft(%a, %w, n_fft=8, hop_length=3, win_length=6)", [f(20), f(5)]),
    Case("stft", "a signal shorter than n_fft", "%a: F(?), %w: F(?)",
         "stft(%a, %w, n_fft=8, hop_length=3, win_length=6)", [f(5), f(6)]),
    # normalisations: per-channel operands of the wrong length
    Case("nn.batch_norm", "parameters of length 1 for 3 channels", "%x: F(2, ?), %g: F(?), %b: F(?), %m: F(?), %v: F(?)",
         "nn.batch_norm(%x, %g, %b, %m, %v).0", [f(2, 3), f(1), f(1), f(1), f(1)]),
    Case("nn.batch_norm", "parameters of length 2 for 3 channels", "%x: F(2, ?), %g: F(?), %b: F(?), %m: F(?), %v: F(?)",
         "nn.batch_norm(%x, %g, %b, %m, %v).0", [f(2, 3), f(2), f(2), f(2), f(2)]),
    Case("nn.layer_norm", "gamma of length 1 for 3", "%x: F(2, ?), %g: F(?), %b: F(?)", "nn.layer_norm(%x, %g, %b)",
         [f(2, 3), f(1), f(1)]),
    Case("nn.instance_norm", "gamma of length 1 for 3 channels", "%x: F(1, ?, 2), %g: F(?), %b: F(?)",
         "nn.instance_norm(%x, %g, %b)", [f(1, 3, 2), f(1), f(1)]),
    Case("nn.group_norm", "6 channels in 4 groups", "%x: F(1, ?, 2), %g: F(?), %b: F(?)",
         "nn.group_norm(%x, %g, %b, num_groups=4)", [f(1, 6, 2), f(6), f(6)]),
    Case("nn.group_norm", "gamma of length 1 for 4 channels", "%x: F(1, ?, 2), %g: F(?), %b: F(?)",
         "nn.group_norm(%x, %g, %b, num_groups=2)", [f(1, 4, 2), f(1), f(1)]),
    # linear algebra and convolutions: the reduced dimension
    Case("nn.dense", "k of 3 vs 5", "%a: F(2, ?), %w: F(4, ?)", "nn.dense(%a, %w, units=4)", [f(2, 3), f(4, 5)]),
    Case("nn.matmul", "k of 3 vs 5", "%a: F(2, ?), %w: F(?, 4)", "nn.matmul(%a, %w, units=4)", [f(2, 3), f(5, 4)]),
    Case("nn.contrib_dense_pack", "k of 3 vs 5", "%a: F(2, ?), %w: F(1, ?, 4)",
         'nn.contrib_dense_pack(%a, %w, units=4, weight_layout="NC4n")', [f(2, 3), f(1, 5, 4)]),
    Case("nn.batch_matmul", "batch 2 vs 3", "%x: F(?, 2, 3), %y: F(?, 3, 4)", "nn.batch_matmul(%x, %y)",
         [f(2, 2, 3), f(3, 3, 4)]),
    Case("nn.batch_matmul", "k of 3 vs 5", "%x: F(1, 2, ?), %y: F(1, ?, 4)", "nn.batch_matmul(%x, %y)",
         [f(1, 2, 3), f(1, 5, 4)]),
    Case("nn.conv1d", "3 vs 2 input channels", "%x: F(1, ?, 5), %w: F(2, ?, 3)", "nn.conv1d(%x, %w)",
         [f(1, 3, 5), f(2, 2, 3)]),
    Case("nn.conv2d", "3 vs 2 input channels", "%x: F(1, ?, 4, 4), %w: F(2, ?, 3, 3)", "nn.conv2d(%x, %w)",
         [f(1, 3, 4, 4), f(2, 2, 3, 3)]),
    Case("nn.conv2d", "input smaller than the kernel", "%x: F(1, 1, ?, 4), %w: F(2, 1, 3, 3)", "nn.conv2d(%x, %w)",
         [f(1, 1, 1, 4), f(2, 1, 3, 3)]),
    Case("nn.conv3d", "3 vs 2 input channels", "%x: F(1, ?, 3, 3, 3), %w: F(2, ?, 2, 2, 2)", "nn.conv3d(%x, %w)",
         [f(1, 3, 3, 3, 3), f(2, 2, 2, 2, 2)]),
    Case("nn.conv1d_transpose", "3 vs 2 input channels", "%x: F(1, ?, 4), %w: F(?, 2, 3)", "nn.conv1d_transpose(%x, %w)",
         [f(1, 3, 4), f(2, 2, 3)]),
    Case("nn.conv2d_transpose", "3 vs 2 input channels", "%x: F(1, ?, 3, 3), %w: F(?, 2, 2, 2)",
         "nn.conv2d_transpose(%x, %w)", [f(1, 3, 3, 3), f(2, 2, 2, 2)]),
    Case("nn.conv3d_transpose", "3 vs 2 input channels", "%x: F(1, ?, 2, 2, 2), %w: F(?, 2, 2, 2, 2)",
         "nn.conv3d_transpose(%x, %w)", [f(1, 3, 2, 2, 2), f(2, 2, 2, 2, 2)]),
    Case("nn.contrib_conv2d_NCHWc", "3 vs 2 input channels", "%x: F(1, ?, 4, 4, 1), %w: F(2, ?, 3, 3, 1, 1)",
         'nn.contrib_conv2d_NCHWc(%x, %w, channels=2, kernel_size=[3, 3], data_layout="NCHW1c", kernel_layout="OIHW1i1o", '
         'out_layout="NCHW1c")', [f(1, 3, 4, 4, 1), f(2, 2, 3, 3, 1, 1)]),
    Case("nn.correlation", "maps of 3 and 4 channels", "%a: F(1, ?, 4, 4), %b: F(1, ?, 4, 4)",
         "nn.correlation(%a, %b, padding=[1, 1])", [f(1, 3, 4, 4), f(1, 4, 4, 4)]),
    Case("nn.correlation", "height 1 for a border of 2", "%a: F(1, 1, ?, 6), %b: F(1, 1, ?, 6)",
         "nn.correlation(%a, %b, max_displacement=2)", [f(1, 1, 1, 6), f(1, 1, 1, 6)]),
    # pooling windows larger than a `?` input
    Case("nn.max_pool1d", "width 1 for a window of 3", "%x: F(1, 1, ?)", "nn.max_pool1d(%x, pool_size=[3])", [f(1, 1, 1)]),
    Case("nn.max_pool2d", "height 1 for a window of 3", "%x: F(1, 1, ?, 4)", "nn.max_pool2d(%x, pool_size=[3, 3])",
         [f(1, 1, 1, 4)]),
    Case("nn.max_pool3d", "depth 1 for a window of 3", "%x: F(1, 1, ?, 2, 2)", "nn.max_pool3d(%x, pool_size=[3, 2, 2])",
         [f(1, 1, 1, 2, 2)]),
    Case("nn.avg_pool1d", "width 1 for a window of 3", "%x: F(1, 1, ?)", "nn.avg_pool1d(%x, pool_size=[3])", [f(1, 1, 1)]),
    Case("nn.avg_pool2d", "height 1 for a window of 3", "%x: F(1, 1, ?, 4)", "nn.avg_pool2d(%x, pool_size=[3, 3])",
         [f(1, 1, 1, 4)]),
    Case("nn.avg_pool3d", "depth 1 for a window of 3", "%x: F(1, 1, ?, 2, 2)", "nn.avg_pool3d(%x, pool_size=[3, 2, 2])",
         [f(1, 1, 1, 2, 2)]),
]

CASES: list[Case] = _broadcast_cases() + _TABLE


# ---------------------------------------------------------------- operators no `?` size can break

_ANY_SHAPE = "any run-time shape is valid for it"

NO_RUNTIME_CONDITION: dict[str, str] = {
    **{name: f"elementwise over one tensor: {_ANY_SHAPE}" for name in (
        "abs acos acosh asin asinh atan atanh bitwise_not cast ceil clip copy cos cosh erf exp fast_erf fast_exp "
        "fast_tanh fixed_point_multiply floor isfinite isinf isnan log log10 log2 logical_not negative "
        "nn.leaky_relu nn.relu ones_like reinterpret round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc "
        "zeros_like"
    ).split()},
    **{name: f"shape comes from the attributes or a scalar: {_ANY_SHAPE}" for name in (
        "zeros ones full arange"
    ).split()},
    **{name: f"takes the second operand's dtype or a scalar only: {_ANY_SHAPE}" for name in (
        "cast_like full_like trilu"
    ).split()},
    **{name: f"reduces any extent (an empty one to its identity or NaN): {_ANY_SHAPE}" for name in (
        "sum mean prod all any"
    ).split()},
    **{name: f"rearranges or repeats every element: {_ANY_SHAPE}" for name in (
        "transpose reverse expand_dims repeat tile nn.batch_flatten meshgrid ndarray_size shape_of nn.pad "
        "nn.upsampling nn.upsampling3d nn.dilate image.resize1d image.resize2d image.resize3d"
    ).split()},
    **{name: f"works along one axis of any length: {_ANY_SHAPE}" for name in (
        "sort argsort cumsum cumprod nn.softmax nn.log_softmax nn.lrn nn.l2_normalize nn.dropout one_hot"
    ).split()},
    **{name: f"adapts its window to the input: {_ANY_SHAPE}" for name in (
        "nn.adaptive_avg_pool1d nn.adaptive_avg_pool2d nn.adaptive_avg_pool3d nn.adaptive_max_pool1d "
        "nn.adaptive_max_pool2d nn.adaptive_max_pool3d nn.global_avg_pool2d nn.global_max_pool2d"
    ).split()},
    **{name: f"an identity (a fusion or partition marker): {_ANY_SHAPE}" for name in (
        "annotation.stop_fusion annotation.checkpoint annotation.compiler_begin annotation.compiler_end"
    ).split()},
    **{name: "result shape depends on data (no TE lowering); the interpreter and python run it, cpp refuses" for name in (
        "dyn.zeros dyn.ones dyn.full dyn.reshape dyn.topk dyn.strided_slice"
    ).split()},
    **{name: "not swept here yet: its `?`-dim relation and kernel value checks are tested in tests/test_ops_vision.py" for name in (
        "image.crop_and_resize vision.get_valid_counts vision.non_max_suppression vision.all_class_non_max_suppression "
        "vision.roi_align vision.roi_pool vision.multibox_prior vision.multibox_transform_loc vision.yolo_reorg "
        "vision.proposal"
    ).split()},
    "argwhere": "result shape depends on data (no TE lowering); the interpreter and python run it, cpp refuses",
    "unique": "result shape depends on data (no TE lowering); the interpreter and python run it, cpp refuses",
}
