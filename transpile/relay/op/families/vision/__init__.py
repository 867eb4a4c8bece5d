"""The vision.* operators (TVM's relay.vision): importing this package registers them."""

from . import all_class_nms, anchors, multibox, nms, proposal, roi  # noqa: F401
