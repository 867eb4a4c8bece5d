"""TVM's `runtime.module`: Module (transpile's executor modules), load_module, BenchmarkResult (apache-tvm's own)."""

from tvm.runtime.module import BenchmarkResult

from ...relay.backend.runtime_module import Module, load_module

__all__ = ["BenchmarkResult", "Module", "load_module"]
