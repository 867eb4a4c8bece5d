"""The image.* operators (TVM's relay.image): importing this package registers them."""

from . import crop_and_resize, grid_sample, resize  # noqa: F401
