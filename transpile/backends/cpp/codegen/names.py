"""C++ identifiers for LIR names: sanitized, never a keyword, unique within their scope."""

from __future__ import annotations

import re

__all__ = ["Namespace", "identifier", "CPP_KEYWORDS"]

CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class
    compl const constexpr const_cast continue decltype default delete do double dynamic_cast else enum
    explicit export extern false float for friend goto if inline int long mutable namespace new noexcept
    not not_eq nullptr operator or or_eq private protected public register reinterpret_cast return short
    signed sizeof static static_assert static_cast struct switch template this thread_local throw true try
    typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
    main std trt ffi tvm env Tensor Any errno assert NULL""".split()
)

_INVALID = re.compile(r"[^A-Za-z0-9_]")


def identifier(name: str, fallback: str = "v") -> str:
    """A valid C++ identifier close to `name` (reserved leading underscores and keywords avoided)."""
    text = _INVALID.sub("_", name).lstrip("_") or fallback
    if text[0].isdigit():
        text = f"{fallback}{text}"
    if text in CPP_KEYWORDS:
        text += "_"
    return text


class Namespace:
    """Maps keys to distinct identifiers; children see the parent's names as taken."""

    def __init__(self, parent: "Namespace | None" = None):
        self.parent = parent
        self.names: dict = {}
        self.taken: set[str] = set()

    def child(self) -> "Namespace":
        return Namespace(self)

    def _is_taken(self, name: str) -> bool:
        scope = self
        while scope is not None:
            if name in scope.taken:
                return True
            scope = scope.parent
        return False

    def bind(self, key, name: str, fallback: str = "v") -> str:
        base = identifier(name, fallback)
        candidate, suffix = base, 0
        while self._is_taken(candidate):
            suffix += 1
            candidate = f"{base}_{suffix}"
        self.taken.add(candidate)
        self.names[key] = candidate
        return candidate

    def reserve(self, name: str) -> None:
        self.taken.add(name)

    def get(self, key):
        scope = self
        while scope is not None:
            if key in scope.names:
                return scope.names[key]
            scope = scope.parent
        return None

    def lookup(self, key) -> str:
        name = self.get(key)
        if name is None:
            raise KeyError(key)
        return name
