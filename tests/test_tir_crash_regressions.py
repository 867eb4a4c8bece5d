"""tir run-time crashes found by the differential fuzzer, each run in a subprocess so a segfault fails the test.

The cause (fixed in backends/tir/build.py): TVM's StorageRewrite merged a function's bool result
storage into a dead wider allocation (a call's float64/int64 result) and then, because the
function touched that memory only through the int8 views of bool buffers, retyped the allocation
to int8 keeping its element count: float64[129] became int8[129] on the stack and the callee
writing its float64 result into it overran the frame. Every program here has that shape: a
called function's wide result dies before a bool result is computed, next to outputs that are
inputs returned as they are. Each crashed the tir backend (signal 11) before the fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REGRESSIONS = Path(__file__).parent / "fuzz_regressions"

# The fuzzer's finding: an input returned beside a bool tensor computed from a call's result.
FUZZ_FINDING = (REGRESSIONS / "tir_crash_bool_result_beside_input.relay").read_text()

# An input returned twice (two outputs aliasing one input) around a bool computed from a call's result.
INPUT_TWICE_AROUND_A_BOOL = """
def @wide(%a: Tensor[(3, 5), float32]) -> Tensor[(3, 5, 4), float64] {
  ones(shape=[3, 5, 4], dtype="float64")
}
def @main(%x: Tensor[(3, 5), float32]) -> (Tensor[(3, 5), float32], Tensor[(3, 5), bool], Tensor[(3, 5), float32]) {
  let %w = @wide(%x);
  (%x, less(cast(%x, dtype="float64"), max(%w, axis=[2])), %x)
}
"""

# The bool result comes from a called function, fed by another call's wide result.
BOOL_FROM_A_CALLED_FUNCTION = """
def @positive(%a: Tensor[(6, 4), float64]) -> Tensor[(6, 4), bool] {
  greater(%a, zeros(shape=[6, 4], dtype="float64"))
}
def @grow(%a: Tensor[(6, 4), float32]) -> Tensor[(6, 4, 5), float64] {
  add(expand_dims(cast(%a, dtype="float64"), axis=2), ones(shape=[6, 4, 5], dtype="float64"))
}
def @main(%x: Tensor[(6, 4), float32]) -> (Tensor[(6, 4), bool], Tensor[(6, 4), float32]) {
  let %g = @grow(%x);
  (@positive(min(%g, axis=[2])), %x)
}
"""

# Integer data: an int64 call result, and two inputs (of different dtypes) returned beside the bool.
INTEGER_CALL_RESULT_AND_TWO_INPUTS = """
def @big(%a: Tensor[(2, 3), int64]) -> Tensor[(2, 3, 7), int64] {
  add(expand_dims(%a, axis=2), ones(shape=[2, 3, 7], dtype="int64"))
}
def @main(%x: Tensor[(2, 3), int64], %y: Tensor[(4), float32]) -> (Tensor[(4), float32], Tensor[(2, 3), bool], Tensor[(2, 3), int64]) {
  let %b = @big(%x);
  (%y, equal(sum(%b, axis=[2]), %x), %x)
}
"""

PROGRAMS = {
    "fuzz_finding": FUZZ_FINDING,
    "input_twice_around_a_bool": INPUT_TWICE_AROUND_A_BOOL,
    "bool_from_a_called_function": BOOL_FROM_A_CALLED_FUNCTION,
    "integer_call_result_and_two_inputs": INTEGER_CALL_RESULT_AND_TWO_INPUTS,
}

# Compiles the program on stdin with the backend named in argv, runs it on seeded random arguments
# and compares every output (dtype, shape, values) with the interpreter's.
CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import transpile
    from transpile import relay

    text, backend = sys.stdin.read(), sys.argv[1]
    rng = np.random.default_rng(12)
    args = []
    for param in relay.parse(text)["main"].params:
        ty = param.type_annotation
        shape = [int(d) for d in ty.shape]
        args.append((rng.standard_normal(shape) * 3).astype(ty.dtype))

    def leaves(value):
        if isinstance(value, (tuple, list)):
            return [leaf for item in value for leaf in leaves(item)]
        return [np.asarray(value)]

    expected = leaves(transpile.compile(relay.parse(text), backend="interpreter")(*args))
    got = leaves(transpile.compile(relay.parse(text), backend=backend)(*args))
    assert len(got) == len(expected), (len(got), len(expected))
    for index, (g, e) in enumerate(zip(got, expected)):
        assert (g.dtype, g.shape) == (e.dtype, e.shape), (index, g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_array_equal(g, e, err_msg=f"output {index}")
    print("agrees")
    """
)


@pytest.mark.parametrize("backend", ["tir", "cpp"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_runs_without_crashing_and_agrees_with_the_interpreter(name, backend):
    run = subprocess.run(
        [sys.executable, "-c", CHILD, backend],
        input=PROGRAMS[name],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
        cwd=Path(__file__).parents[1],
    )
    died = f" (killed by signal {-run.returncode})" if run.returncode < 0 else ""
    assert run.returncode == 0 and run.stdout.strip().endswith("agrees"), (
        f"{name} on {backend}: exit code {run.returncode}{died}\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    )
