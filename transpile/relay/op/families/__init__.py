"""Operator families; importing this package registers every operator."""

from . import elemwise, reduce, transform, nn  # noqa: F401
