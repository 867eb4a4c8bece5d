"""TVM's `runtime.module` names that executor code uses: BenchmarkResult (apache-tvm's own)."""

from tvm.runtime.module import BenchmarkResult

__all__ = ["BenchmarkResult"]
