"""TVM's `tvm.rpc`, for the local host only: a Server in this process and sessions connected to it.

TVM ran programs on remote devices through an RPC server: a client uploaded an exported module,
loaded it remotely and ran it there. transpile builds for the local host only, so a `Server`
here is an in-process stand-in (host 127.0.0.1/localhost; its "remote" files live in a temporary
directory) and `connect` to it gives a `LocalSession` that uploads into that directory and loads
modules with runtime.load_module. Connecting to any other address raises RPCNotAvailableError.
`LocalSession()` alone is TVM's own local session (files in a fresh temporary directory).
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

from ..errors import TranspileError

__all__ = ["Server", "connect", "LocalSession", "RPCNotAvailableError"]

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "0.0.0.0", "::1")
_servers: dict = {}
_ports = itertools.count(9091)


class RPCNotAvailableError(TranspileError):
    """A remote RPC session: transpile runs programs on the local host only."""


class LocalSession:
    """A session whose "remote" side is this process: files go to a workspace directory."""

    def __init__(self, workspace=None):
        from .contrib.utils import tempdir

        self._tempdir = tempdir() if workspace is None else None
        self.workspace = Path(workspace if workspace is not None else self._tempdir.temp_dir)

    def upload(self, data, target=None):
        """Copies a file (a path) or bytes into the workspace, as `target` (default: the file's name)."""
        if isinstance(data, (bytes, bytearray)):
            if target is None:
                raise TranspileError("upload of bytes needs a target file name")
            (self.workspace / target).write_bytes(bytes(data))
            return
        source = Path(data)
        shutil.copyfile(source, self.workspace / (target or source.name))

    def download(self, path) -> bytearray:
        return bytearray((self.workspace / path).read_bytes())

    def remove(self, path) -> None:
        (self.workspace / path).unlink(missing_ok=True)

    def listdir(self, path=".") -> list[str]:
        return sorted(p.name for p in (self.workspace / path).iterdir())

    def load_module(self, path):
        from .runtime.module import load_module

        return load_module(self.workspace / path)

    def device(self, dev_type, dev_id=0):
        from .device import device

        return device(dev_type, dev_id)

    def cpu(self, dev_id=0):
        return self.device("cpu", dev_id)

    def get_function(self, name):
        raise RPCNotAvailableError(f"remote function {name!r}: transpile's local session has no global functions")


class Server:
    """An in-process stand-in for TVM's RPC server on the local host."""

    def __init__(self, host="127.0.0.1", port=9091, port_end=9199, is_proxy=False, *args, **kwargs):
        if is_proxy or host not in _LOCAL_HOSTS:
            raise RPCNotAvailableError(
                f"tvm.rpc.Server({host!r}): transpile runs programs on the local host only (use 127.0.0.1)"
            )
        self.host = host
        self.port = next(_ports)
        self._session = LocalSession()
        _servers[self.port] = self

    def terminate(self) -> None:
        _servers.pop(self.port, None)

    def __del__(self):
        if _servers is not None:  # None while the interpreter shuts down
            _servers.pop(getattr(self, "port", None), None)


def connect(url, port, key="", session_timeout=0, session_constructor_args=None, enable_logging=False):
    """A session with the in-process Server listening on `port` of the local host."""
    server = _servers.get(port)
    if url not in _LOCAL_HOSTS or server is None:
        raise RPCNotAvailableError(
            f"tvm.rpc.connect({url!r}, {port}): transpile runs programs on the local host only; connect to a "
            "tvm.rpc.Server started in this process"
        )
    return server._session
