"""TVM's `tvm.contrib` pieces Relay code uses: utils (temporary directories), graph_executor, nvcc."""

from . import graph_executor, nvcc, utils

__all__ = ["graph_executor", "nvcc", "utils"]
