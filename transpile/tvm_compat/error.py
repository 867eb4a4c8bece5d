"""TVM's `tvm.error`: every transpile error is what TVM raised as TVMError (or one of its kinds).

TVM reported type errors as DiagnosticError and operator problems as OpError; transpile's errors
are all TranspileError subclasses, so each TVM name here is TranspileError itself: code catching
any of them catches what transpile raises in the same situation.
"""

from ..errors import TranspileError

TVMError = TranspileError
InternalError = TranspileError
DiagnosticError = TranspileError
OpError = TranspileError
OpNotImplemented = TranspileError
OpAttributeInvalid = TranspileError
OpAttributeRequired = TranspileError
OpAttributeUnImplemented = TranspileError

__all__ = [
    "TVMError",
    "InternalError",
    "DiagnosticError",
    "OpError",
    "OpNotImplemented",
    "OpAttributeInvalid",
    "OpAttributeRequired",
    "OpAttributeUnImplemented",
]
