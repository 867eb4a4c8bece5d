"""ATen operator converters, one module per family; importing the package registers them all."""

from . import activation, creation, elementwise, indexing, nn, pool, reduce, scatter, shape  # noqa: F401
