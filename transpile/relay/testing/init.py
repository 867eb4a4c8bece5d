"""Parameters for test networks (TVM's relay.testing.init): initializers chosen by parameter name.

`create_workload(net)` types the network and gives every parameter but `data` an initial value:
"*weight" by the initializer (Xavier by default), "*bias"/"*beta"/"*mean" zeros, "*gamma"/"*var" ones.
"""

from __future__ import annotations

import numpy as np

from ...errors import TranspileError

__all__ = ["Initializer", "Xavier", "Constant", "create_workload"]


class Initializer:
    """Fills an array according to what its parameter's name says it is."""

    def __call__(self, name: str, array: np.ndarray) -> None:
        for suffix, fill in (
            ("weight", None),
            ("bias", 0.0),
            ("gamma", 1.0),
            ("beta", 0.0),
            ("mean", 0.0),
            ("var", 1.0),
        ):
            if name.endswith(suffix):
                if fill is None:
                    self.init_weight(name, array)
                else:
                    array[...] = fill
                return
        raise TranspileError(
            f"no initialization pattern for parameter {name!r}: names end in weight, bias, gamma, beta, mean or var"
        )

    def init_weight(self, name: str, array: np.ndarray) -> None:
        raise TranspileError(f"{type(self).__name__} does not initialize weights")


class Xavier(Initializer):
    """Uniform in ±sqrt(magnitude / fan), fan from the weight's shape (its first two axes times the rest)."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        if rnd_type != "uniform":
            raise TranspileError(f"Xavier: only uniform random values are supported, not {rnd_type!r}")
        if factor_type not in ("avg", "in", "out"):
            raise TranspileError(f"Xavier: factor_type must be avg, in or out, not {factor_type!r}")
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def init_weight(self, name, array):
        shape = array.shape
        if len(shape) < 2:
            raise TranspileError(
                f"Xavier initialization needs a weight of 2 or more dimensions; {name} has shape {shape}"
            )
        receptive = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        if "depthwise" in name:  # one input channel per filter: the window alone is the fan
            factor = receptive
        scale = np.sqrt(self.magnitude / factor)
        array[...] = np.random.uniform(-scale, scale, size=shape)


class Constant(Initializer):
    """Every weight element 1 / size (a weight sums to 1)."""

    def init_weight(self, name, array):
        array[...] = 1.0 / array.size


def create_workload(net, initializer=None, seed=0):
    """(module with `net` as @main, typed; {parameter name: NDArray}) for every parameter but `data`."""
    from ..backend.values import to_ndarray
    from ..module import IRModule
    from ..transform import InferType
    from ..ty import TensorType

    mod = InferType()(IRModule.from_expr(net))
    np.random.seed(seed)
    initializer = initializer or Xavier()
    params = {}
    for param in mod["main"].params:
        if param.name_hint == "data":
            continue
        ty = param.checked_type
        if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
            raise TranspileError(f"create_workload: parameter {param.name_hint} needs a static tensor type, got {ty}")
        value = np.zeros(tuple(ty.shape), dtype=ty.dtype)
        initializer(param.name_hint, value)
        params[param.name_hint] = to_ndarray(value)
    return mod, params
