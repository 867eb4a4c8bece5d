"""Safe, unique, deterministic Python identifiers for any name a Relay program (or builder-API user) chose."""

from __future__ import annotations

import builtins
import keyword
import re
import unicodedata

__all__ = ["RESERVED", "Namespace", "sanitize"]

# Names a generated module must never bind: keywords (soft ones too), builtins, and the module
# attributes Python itself sets. The generated module's own imports are reserved by the codegen.
RESERVED = frozenset(keyword.kwlist) | frozenset(getattr(keyword, "softkwlist", ())) | frozenset(dir(builtins))
RESERVED |= {"_", "self", "cls"}

_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]+")


def _ascii(text: str) -> str:
    # "é" -> "e": keep the readable base letter; anything else non-ASCII becomes a separator.
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def sanitize(name, fallback: str = "v") -> str:
    """An ASCII identifier close to `name`: separators become `_`, a leading digit gets `fallback`
    as prefix, dunder names lose their underscores (they mean something to Python)."""
    text = _NOT_IDENT.sub("_", _ascii(str(name)))
    if text.startswith("__"):
        text = text.strip("_")
    if not text or text.strip("_") == "":
        return fallback
    if text[0].isdigit():
        text = fallback + text
    return text


class Namespace:
    """Allocates distinct identifiers in one Python scope; `child()` starts a nested scope that must
    also avoid everything already taken (so a local never shadows a global it might use)."""

    def __init__(self, taken=()):
        self._taken: set[str] = set(RESERVED) | set(taken)
        self._given: dict = {}

    def reserve(self, name: str) -> str:
        """Claim an exact identifier (the module's imports); it must still be free."""
        if name in self._taken and name not in RESERVED:
            raise ValueError(f"{name!r} is already taken")
        self._taken.add(name)
        return name

    def fresh(self, name, fallback: str = "v") -> str:
        """A new identifier based on `name`: `x`, else `x_1`, `x_2`, ... (`print` -> `print_`)."""
        base = sanitize(name, fallback)
        if base in RESERVED:
            base += "_"
        candidate, suffix = base, 0
        while candidate in self._taken:
            suffix += 1
            candidate = f"{base}_{suffix}"
        self._taken.add(candidate)
        return candidate

    def bind(self, key, name, fallback: str = "v") -> str:
        """`fresh(name)` remembered under `key`; later `lookup(key)` returns the same identifier."""
        if key in self._given:
            raise ValueError(f"{key!r} is bound twice")
        ident = self.fresh(name, fallback)
        self._given[key] = ident
        return ident

    def lookup(self, key) -> str:
        return self._given[key]

    def get(self, key, default=None):
        return self._given.get(key, default)

    def child(self) -> "Namespace":
        inner = Namespace()
        inner._taken = set(self._taken)
        return inner

    def __contains__(self, name: str) -> bool:
        return name in self._taken
