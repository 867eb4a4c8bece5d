"""TVM's `tvm.contrib.utils`: temporary directories removed when no longer used."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

__all__ = ["TempDirectory", "tempdir"]


class TempDirectory:
    """A fresh directory; `relpath(name)` is a path inside it; `/` joins too. Removed on remove() or collection."""

    def __init__(self, custom_path=None, keep_for_debug=False):
        if custom_path is not None:
            Path(custom_path).mkdir(parents=True, exist_ok=True)
            self.temp_dir = str(custom_path)
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="tvm_compat_")
        self._owned = custom_path is None and not keep_for_debug

    def relpath(self, name: str) -> str:
        return str(Path(self.temp_dir) / name)

    def __truediv__(self, name):
        return Path(self.temp_dir) / name

    def listdir(self) -> list[str]:
        return sorted(p.name for p in Path(self.temp_dir).iterdir())

    def remove(self) -> None:
        if self._owned and self.temp_dir and Path(self.temp_dir).exists():
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        self._owned = False

    def __del__(self):
        self.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def tempdir(custom_path=None, keep_for_debug=None) -> TempDirectory:
    return TempDirectory(custom_path, bool(keep_for_debug))
