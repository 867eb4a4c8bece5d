"""The Python generated for the README's examples through the real pipeline, locked as golden files.

Regenerate with `TRANSPILE_UPDATE_GOLDEN=1 pytest tests/test_python_examples_golden.py` after an
intended change, and paste the new output into README.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.runtime import ADTValue

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GOLDEN = Path(__file__).resolve().parent / "python_golden" / "examples"
UPDATE = os.environ.get("TRANSPILE_UPDATE_GOLDEN") == "1"

PROGRAMS = {"map": True, "closures": False, "mlp": False}  # example name -> needs the Prelude


def load_example(name: str):
    init = None
    if PROGRAMS[name]:
        init = relay.IRModule()
        relay.Prelude(init)
    # A relative source name keeps the generated comments independent of the checkout's location.
    path = EXAMPLES / f"{name}.rly"
    return relay.parse(path.read_text(), source_name=f"examples/{name}.rly", init_module=init)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_generated_python_matches_golden(name):
    source = transpile.emit(load_example(name), backend="python")
    golden = GOLDEN / f"{name}.py"
    if UPDATE:
        golden.write_text(source, encoding="utf-8")
    assert source == golden.read_text(encoding="utf-8")
    assert transpile.emit(load_example(name), backend="python") == source  # deterministic


def test_golden_examples_compute_the_right_values():
    to_list = lambda xs: ADTValue("Cons", (np.int32(xs[0]), to_list(xs[1:]))) if xs else ADTValue("Nil")  # noqa: E731
    mapped = transpile.compile(load_example("map"), backend="python")(to_list([1, 2, 3]))
    assert mapped == to_list([3, 5, 7])
    counts = transpile.compile(load_example("closures"), backend="python")(np.int32(5))
    assert [int(c) for c in counts] == [5, 10, 15]
    rng = np.random.default_rng(0)
    x, w1, b1, w2 = (rng.standard_normal(s).astype("float32") for s in [(1, 4), (3, 4), (3,), (2, 3)])
    logits = np.maximum(x @ w1.T + b1, 0) @ w2.T
    expected = np.exp(logits) / np.exp(logits).sum()
    got = transpile.compile(load_example("mlp"), backend="python")(x, w1, b1, w2)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
