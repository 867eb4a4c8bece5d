"""TVM's `tvm.topi.cuda` (gone from apache-tvm 0.27), as `transpile.tvm_compat.topi.cuda`: the helpers Relay code imports.

Only pure helpers live here; CUDA schedules do not (transpile's executors target llvm/cpu).
"""

from . import conv3d_winograd

__all__ = ["conv3d_winograd"]
