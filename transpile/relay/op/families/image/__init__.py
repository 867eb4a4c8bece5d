"""The image.* operators (TVM's relay.image): importing this package registers them."""

from . import grid_sample, resize  # noqa: F401
