"""ONNX operator converters, one module per family; importing the package registers them all."""

from . import elementwise  # noqa: F401
from . import values  # noqa: F401
from . import reduce  # noqa: F401
from . import shape  # noqa: F401
from . import indexing  # noqa: F401
from . import rearrange, sequence, control  # noqa: F401
from . import training  # noqa: F401
from . import conv, pool, norm, matmul, activation, dropout, resize, rnn, spatial  # noqa: F401
from . import quantize, loss, unsupported, attention, stateful, signal, detection, columns, linalg, text  # noqa: F401
