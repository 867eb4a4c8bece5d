"""Base class of immutable IR nodes (expressions, types, patterns) with an optional source span."""

from __future__ import annotations

__all__ = ["Node"]


class Node:
    """Immutable after construction; subclasses declare `__slots__` and call `_init`."""

    __slots__ = ("span",)

    def _init(self, **fields):
        for key, value in fields.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} is immutable (tried to set {key!r})")

    def __delattr__(self, key):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def same_as(self, other) -> bool:
        """TVM's ObjectRef.same_as: the very same node object (not merely equal)."""
        return self is other

    def fields(self) -> dict:
        """The node's declared fields (excluding span), in declaration order."""
        out = {}
        for klass in reversed(type(self).__mro__):
            for name in getattr(klass, "__slots__", ()):
                if name == "span" or name.endswith("_") or name.startswith("_"):
                    continue
                out[name] = getattr(self, name)
        return out

    def __repr__(self):
        from .printer import astext_node

        try:
            return astext_node(self)
        except Exception:  # repr must never fail, even on half-built nodes
            inner = ", ".join(f"{k}={v!r}" for k, v in self.fields().items())
            return f"{type(self).__name__}({inner})"

    def __str__(self):
        return self.__repr__()
