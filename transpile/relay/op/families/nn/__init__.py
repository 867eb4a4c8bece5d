"""The nn.* operators (TVM's relay.nn): importing this package registers them."""

from . import activation, conv, conv3d, conv_packed, dense, dense_pack, lrn, norm, pool, space, spatial  # noqa: F401
from . import correlation, dilate, upsampling3d  # noqa: F401
