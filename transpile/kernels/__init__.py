"""Shared kernel compiler: LIR Kernel -> TE (registry te_impls) -> scheduled PrimFunc -> host object code.

Submodules import tvm; import them directly (`transpile.kernels.build`, `.lower`, `.target`,
`.schedules`) so that importing this package stays cheap.
"""

__all__ = ["build", "lower", "target", "schedules", "threads"]
