"""Immutable attribute dictionaries for calls and functions, plus opaque meta references."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

__all__ = ["Attrs", "MetaRef", "freeze_attr_value"]


class MetaRef:
    """A `meta[kind][index]` reference whose object we do not model (e.g. VirtualDevice)."""

    __slots__ = ("kind", "index")

    def __init__(self, kind: str, index: int):
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "index", int(index))

    def __setattr__(self, key, value):
        raise AttributeError("MetaRef is immutable")

    def __eq__(self, other):
        return isinstance(other, MetaRef) and (self.kind, self.index) == (other.kind, other.index)

    def __hash__(self):
        return hash(("MetaRef", self.kind, self.index))

    def __repr__(self):
        return f"meta[{self.kind}][{self.index}]"


def freeze_attr_value(value: Any) -> Any:
    """Lists become tuples (recursively) so attribute values are hashable and immutable."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze_attr_value(v) for v in value)
    if hasattr(value, "tolist") and not hasattr(value, "span"):  # numpy scalars/arrays
        return freeze_attr_value(value.tolist())
    return value


class Attrs(Mapping):
    """Read-only mapping with attribute access (`call.attrs.axis`), like tvm.ir.Attrs."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any] | None = None, **kwargs):
        merged = dict(items or {})
        merged.update(kwargs)
        object.__setattr__(self, "_items", {k: freeze_attr_value(v) for k, v in merged.items()})

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __getattr__(self, key: str) -> Any:
        try:
            return self._items[key]
        except KeyError:
            raise AttributeError(f"attrs have no field {key!r}") from None

    def __setattr__(self, key, value):
        raise AttributeError("Attrs are immutable")

    def __eq__(self, other):
        if isinstance(other, Attrs):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other)
        return NotImplemented

    def __hash__(self):
        return hash(tuple(sorted(self._items.items(), key=lambda kv: kv[0])))

    def with_changes(self, **changes) -> "Attrs":
        merged = dict(self._items)
        merged.update(changes)
        return Attrs(merged)

    def __repr__(self):
        return "Attrs(" + ", ".join(f"{k}={v!r}" for k, v in self._items.items()) + ")"
