"""All conformance cases, by theme; `ALL_CASES` in a stable order, names unique."""

from __future__ import annotations

from . import adts, classics, closures_refs, errors, models, operators, prelude, recursion

__all__ = ["ALL_CASES", "THEMES", "by_name"]

THEMES = {
    module.THEME: module.CASES
    for module in (classics, prelude, operators, closures_refs, adts, recursion, models, errors)
}


def _collect():
    cases = []
    seen = set()
    for theme, theme_cases in THEMES.items():
        for case in theme_cases:
            if case.name in seen:
                raise ValueError(f"two conformance cases are named {case.name!r}")
            seen.add(case.name)
            object.__setattr__(case, "theme", theme)
            cases.append(case)
    return cases


ALL_CASES = _collect()


def by_name(name: str):
    for case in ALL_CASES:
        if case.name == name:
            return case
    raise KeyError(f"no conformance case named {name!r}")
