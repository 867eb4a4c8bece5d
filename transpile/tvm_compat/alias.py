"""A module finder that makes one package name stand for another: `transpile.tvm_compat.relay[.X]`
is `transpile.relay[.X]` (the very module object, not a copy), `transpile.tvm_compat.topi[.X]` is
apache-tvm's `tvm.topi[.X]`.

So `import transpile.tvm_compat.relay.testing` and `from transpile.tvm_compat.relay.backend.interpreter
import ConstructorValue` work exactly as the redirected `import tvm.relay.testing` lines expect.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["ALIASES", "AliasFinder", "install"]

# alias package -> real package
ALIASES = {
    "transpile.tvm_compat.relay": "transpile.relay",
    # apache-tvm has no tvm.topi.cuda; checked before the topi alias (the first matching prefix wins)
    "transpile.tvm_compat.topi.cuda": "transpile.tvm_compat.topi_cuda",
    "transpile.tvm_compat.topi": "tvm.topi",
}


class _ExistingModuleLoader(importlib.abc.Loader):
    """Hands the import system an already imported module under a second name."""

    def __init__(self, module):
        self.module = module
        self.real_spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # The module ran when it was imported under its real name. The import system has just
        # replaced its __spec__ by the alias's: give it back its own (reload, pickling by name).
        if self.real_spec is not None:
            module.__spec__ = self.real_spec


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds `alias[.X]` by importing `real[.X]` for each (alias, real) pair in `aliases`."""

    def __init__(self, aliases: dict[str, str]):
        self.aliases = dict(aliases)

    def real_name(self, fullname: str) -> str | None:
        for alias, real in self.aliases.items():
            if fullname == alias or fullname.startswith(alias + "."):
                return real + fullname[len(alias) :]
        return None

    def find_spec(self, fullname, path=None, target=None):
        real = self.real_name(fullname)
        if real is None:
            return None
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as exc:
            if exc.name == real:  # the aliased module does not exist: report the alias as missing
                return None
            raise
        return importlib.util.spec_from_loader(fullname, _ExistingModuleLoader(module))


def install() -> AliasFinder:
    """Puts the finder first on sys.meta_path (once per process) and returns it."""
    for finder in sys.meta_path:
        if isinstance(finder, AliasFinder):
            return finder
    finder = AliasFinder(ALIASES)
    sys.meta_path.insert(0, finder)
    return finder
