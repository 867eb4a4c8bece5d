"""Operator families; importing this package registers every operator."""

from . import elemwise, reduce, transform, nn, image  # noqa: F401
from . import algorithm, einsum, scatter_gather, transform_grid  # noqa: F401
from . import signal, sparse, transform_set, transform_window  # noqa: F401
from . import vision  # noqa: F401
from . import annotation  # noqa: F401
from . import dynamic  # noqa: F401  (after the static operators it attaches builder forms to)
