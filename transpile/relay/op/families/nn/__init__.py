"""The nn.* operators (TVM's relay.nn): importing this package registers them."""

from . import activation, conv, conv_packed, dense, dense_pack, norm, pool, spatial  # noqa: F401
