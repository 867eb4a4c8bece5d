"""Reading the real-world Relay corpus (../shared/corpus/relay) in tests: manifest, meta tables, init modules."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from conftest import CORPUS

__all__ = [
    "manifest",
    "records",
    "meta_table",
    "init_module_for",
    "init_module_or_stand_in",
    "stand_in_init_module",
    "load",
    "SKIP_REASONS",
]


@lru_cache(maxsize=1)
def manifest() -> list[dict]:
    return json.loads((CORPUS / "MANIFEST.json").read_text())


def records(kind: str | None = None, expected: str | None = None) -> list[dict]:
    if not (CORPUS / "MANIFEST.json").exists():
        return []
    return [
        r
        for r in manifest()
        if (kind is None or r["kind"] == kind) and (expected is None or r["expected"] == expected)
    ]


def meta_table(record: dict, seed: int = 0, element_budget: int | None = None) -> dict | None:
    """Random constants of the recorded shapes/dtypes (recorded values where the table has them);
    the JSON entries of other kinds (VirtualDevice, ...) as placeholders.

    With `element_budget`, a file whose constants hold more elements than that (GPT-2: 124M) gets
    stand-ins of the same dtype and rank, one element each, for its tensors over 1024 elements:
    for tests where only the program's structure matters and time does."""
    from transpile import relay

    path = CORPUS / (record["file"][: -len(".relay")] + ".meta.json")
    if not path.exists():
        return None
    tables = json.loads(path.read_text())["tables"]
    rng = np.random.default_rng(seed)
    constants = tables.get("relay.Constant", [])
    shrink = element_budget is not None and sum(math.prod(e["shape"]) for e in constants) > element_budget
    out = {}
    for kind, entries in tables.items():
        values = []
        for entry in entries:
            if kind == "relay.Constant":
                dtype = entry["dtype"]
                shape = tuple(entry["shape"])
                if shrink and math.prod(shape) > 1024:
                    shape = (1,) * len(shape)
                if "value" in entry:
                    data = np.asarray(entry["value"], dtype=dtype).reshape(entry["shape"])
                elif np.issubdtype(np.dtype(dtype), np.floating):
                    data = (rng.standard_normal(shape) * 0.1).astype(dtype)
                elif dtype == "bool":
                    data = rng.integers(0, 2, shape).astype(bool)
                else:
                    data = rng.integers(0, 4, shape).astype(dtype)
                values.append(relay.const(data, dtype))
            else:
                values.append(entry)
        out[kind] = values
    return out


# Programs the corpus marks as needing an initial module we cannot rebuild faithfully
# (TVM-internal TIR functions or lowered externs referenced by name).
SKIP_REASONS = {
    "init_module `mod`": "needs TVM-lowered PrimFuncs from the original test's IRModule",
    "init_module `init_module`": "needs the original test's pre-populated IRModule",
}


def init_module_for(record: dict):
    """An initial module for files that need one, or None; raises LookupError with a skip reason."""
    from transpile import relay

    for note in record["notes"]:
        if "std core.rly" in note:
            mod = relay.IRModule()
            mod.add_extern_type("Storage")
            return mod
        for key, reason in SKIP_REASONS.items():
            if key in note:
                raise LookupError(reason)
    return None


def stand_in_init_module(record: dict, source: str):
    """For files parsed with a pre-populated module (TVM-lowered PrimFuncs such as `@gem`): each
    global the file uses but does not define as a trivial Relay function. Enough where structure is
    all that matters (parsing, printing)."""
    import re

    from transpile import relay

    used = set(re.findall(r"@([A-Za-z_][A-Za-z0-9_]*)", source))
    defined = set(re.findall(r"def\s+@([A-Za-z_][A-Za-z0-9_]*)", source))
    return relay.parse("\n".join(f"def @{name}(%a) {{ %a }}" for name in sorted(used - defined)))


def init_module_or_stand_in(record: dict, source: str):
    """`init_module_for(record)`, or the stand-in module where the original cannot be rebuilt."""
    try:
        return init_module_for(record)
    except LookupError:
        return stand_in_init_module(record, source)


def load(record: dict):
    """Parse a corpus file the way its test did: module or expression, meta table, init module."""
    from transpile import relay

    path = CORPUS / record["file"]
    text = path.read_text()
    init = init_module_for(record)
    table = meta_table(record)
    if record["kind"] == "module":
        return relay.parse(text, source_name=str(path), init_module=init, init_meta_table=table)
    return relay.parse_expr(text, source_name=str(path), init_module=init, init_meta_table=table)


def path_of(record: dict) -> Path:
    return CORPUS / record["file"]
