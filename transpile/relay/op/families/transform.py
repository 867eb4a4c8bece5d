"""Transform operators (TVM's transform.cc); importing this module registers all of them.

The definitions live in three modules by concept: shapes (reshape, transpose, squeeze,
expand_dims, layout_transform), indexing/joining (concatenate, stack, split, take,
strided_slice, gather, tile, repeat, reverse) and creation/broadcasting (zeros, ones, full,
arange, one_hot, shape_of, broadcast_to, collapse_sum_like).
"""

from __future__ import annotations

from . import transform_index, transform_init, transform_shape  # noqa: F401
from .transform_index import strided_slice_plan  # noqa: F401
from .transform_init import collapse_sum  # noqa: F401
from .transform_shape import infer_reshape, layout_transform_shape, parse_layout  # noqa: F401
