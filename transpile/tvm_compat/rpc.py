"""TVM's `tvm.rpc` names, for code that imports them: transpile has no RPC runtime.

Running a program on a remote device went through TVM's RPC server and its exported modules;
transpile builds for the local host only, so starting a server or connecting raises a
TranspileError saying so (the rest of a file importing `rpc` still runs).
"""

from __future__ import annotations

from ..errors import TranspileError

__all__ = ["Server", "connect", "RPCNotAvailableError"]


class RPCNotAvailableError(TranspileError):
    """TVM's RPC (remote sessions, uploading modules) is not part of transpile."""


def _unavailable(what: str):
    raise RPCNotAvailableError(f"tvm.rpc.{what}: transpile runs programs on the local host only and has no RPC runtime")


class Server:
    def __init__(self, *args, **kwargs):
        _unavailable("Server")


def connect(*args, **kwargs):
    _unavailable("connect")
