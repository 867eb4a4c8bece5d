"""Small wording helpers for type-error messages."""

from __future__ import annotations

__all__ = ["join", "plural", "were"]


def join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def plural(n: int) -> str:
    return "" if n == 1 else "s"


def were(n: int) -> str:
    return "was" if n == 1 else "were"
