"""Measures how many of TVM v0.19's Relay test files pass on transpile with only their imports redirected."""

from transpile.errors import TranspileError


class PortToolError(TranspileError):
    """Bad input to the measurement tool: an unknown file name, an unusable directory, unparsable results."""
