"""TVM's `tvm.contrib` pieces Relay code uses: utils (temporary directories), graph_executor, nvcc, cudnn."""

from . import cudnn, graph_executor, nvcc, utils

__all__ = ["cudnn", "graph_executor", "nvcc", "utils"]
