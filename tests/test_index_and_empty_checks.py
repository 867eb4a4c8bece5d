"""Reductions over empty axes and data-dependent indices on the compiled backends, against the interpreter.

- A reduction over zero elements gives its identity (sum 0, prod 1, a matmul with k = 0 zeros...):
  create_prim_func initializes a TE reduction inside its reduction loops, which never run for an
  empty axis, so transpile.kernels.lower initializes such reductions before their loops.
- An index out of range where the reference raises (gather) fails the kernel with the same kind of
  error (a value check the kernel evaluates before reading, te_support.require_values), and the
  read itself is clamped; ops whose reference clamps or skips (take, gather_nd, adv_index, the
  scatters) agree with it, and nothing reads past a buffer, an empty axis included.

Each backend builds one module per group (main returns the cases as closures).
"""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError, RelayTypeError

pytest.importorskip("tvm")

F = "float32"


def _zeros(*shape, dtype=F):
    return np.zeros(shape, dtype=dtype)


def _ones(*shape, dtype=F):
    return np.ones(shape, dtype=dtype)


# (parameters, body, arguments): static empty reductions, each giving its identity.
EMPTY_REDUCTIONS = [
    ("%a: Tensor[(4, 0), float32], %w: Tensor[(3, 0), float32]", "nn.dense(%a, %w, units=3)", [_ones(4, 0), _ones(3, 0)]),
    ("%a: Tensor[(4, 0), float32], %w: Tensor[(3, 0), float32]", "nn.relu(add(nn.dense(%a, %w, units=3), 1f))", [_ones(4, 0), _ones(3, 0)]),
    ("%a: Tensor[(3, 0), float32], %w: Tensor[(0, 4), float32]", "nn.matmul(%a, %w, units=4)", [_ones(3, 0), _ones(0, 4)]),
    (
        "%a: Tensor[(2, 3, 0), float32], %w: Tensor[(2, 4, 0), float32]",
        "nn.batch_matmul(%a, %w, transpose_b=True)",
        [_ones(2, 3, 0), _ones(2, 4, 0)],
    ),
    (
        "%a: Tensor[(1, 0, 4), float32], %w: Tensor[(2, 0, 3), float32]",
        "nn.conv1d(%a, %w, kernel_size=[3], channels=2)",
        [_ones(1, 0, 4), _ones(2, 0, 3)],
    ),
    (
        "%a: Tensor[(1, 0, 4, 4), float32], %w: Tensor[(2, 0, 3, 3), float32]",
        "nn.conv2d(%a, %w, kernel_size=[3, 3], channels=2)",
        [_ones(1, 0, 4, 4), _ones(2, 0, 3, 3)],
    ),
    (
        "%a: Tensor[(1, 0, 3, 3, 3), float32], %w: Tensor[(2, 0, 2, 2, 2), float32]",
        "nn.conv3d(%a, %w, kernel_size=[2, 2, 2], channels=2)",
        [_ones(1, 0, 3, 3, 3), _ones(2, 0, 2, 2, 2)],
    ),
    (
        "%a: Tensor[(1, 0, 4, 4), float32], %w: Tensor[(0, 2, 3, 3), float32]",
        "nn.conv2d_transpose(%a, %w, kernel_size=[3, 3], channels=2)",
        [_ones(1, 0, 4, 4), _ones(0, 2, 3, 3)],
    ),
    (
        "%a: Tensor[(3, 0), float32], %w: Tensor[(0, 4), float32]",
        'einsum((%a, %w), equation="ij,jk->ik")',
        [_ones(3, 0), _ones(0, 4)],
    ),
    ("%a: Tensor[(3, 0), float32]", "sum(%a, axis=[1])", [_ones(3, 0)]),
    ("%a: Tensor[(3, 0), float32]", "prod(%a, axis=[1], keepdims=True)", [_ones(3, 0)]),
    ("%a: Tensor[(3, 0), float32]", "max(%a, axis=[1])", [_ones(3, 0)]),
    ("%a: Tensor[(3, 0), bool]", "all(%a, axis=[1])", [_ones(3, 0, dtype="bool")]),
    ("%a: Tensor[(3, 0), float32]", "cumsum(%a, axis=1)", [_ones(3, 0)]),
    ("%a: Tensor[(3, 4), float32]", "cumsum(%a, axis=0, exclusive=True)", [np.arange(12, dtype=F).reshape(3, 4)]),
    ("%a: Tensor[(3, 4), int32]", 'cumprod(%a, dtype="float32")', [np.arange(1, 13, dtype="int32").reshape(3, 4)]),
]

_DATA = np.arange(6, dtype=F).reshape(2, 3)

# (parameters, body, arguments, whether the interpreter raises)
INDEX_CASES = [
    ("%a: Tensor[(2, 3), float32], %i: Tensor[(2, 3), int32]", "gather(%a, %i, axis=1)", [_DATA, np.array([[0, 5, 1], [0, 0, 0]], "int32")], True),
    ("%a: Tensor[(2, 3), float32], %i: Tensor[(2, 3), int32]", "gather(%a, %i, axis=1)", [_DATA, np.array([[0, -4, 1], [0, 0, 0]], "int32")], True),
    ("%a: Tensor[(2, 3), float32], %i: Tensor[(2, 3), int32]", "gather(%a, %i, axis=0)", [_DATA, np.array([[0, 1, -2], [-1, 1, 0]], "int32")], False),
    (
        "%a: Tensor[(2, 3), float32], %i: Tensor[(2, 3), int32]",
        "add(gather(%a, add(%i, 1), axis=1), 1f)",
        [_DATA, np.array([[0, 1, 2], [0, 0, 0]], "int32")],
        True,
    ),
    ("%a: Tensor[(2, 3), float32], %i: Tensor[(2, 0), int32]", "gather(%a, %i, axis=1)", [_DATA, _zeros(2, 0, dtype="int32")], False),
    ("%a: Tensor[(2, 0), float32], %i: Tensor[(2, 1), int32]", "gather(%a, %i, axis=1)", [_zeros(2, 0), _zeros(2, 1, dtype="int32")], True),
    ("%a: Tensor[(0, 3), float32], %i: Tensor[(1, 2), int32]", "gather_nd(%a, %i)", [_zeros(0, 3), np.array([[0, 1]], "int32")], True),
    ("%a: Tensor[(2, 3), float32], %i: Tensor[(2, 2), int32]", "gather_nd(%a, %i)", [_DATA, np.array([[0, 5], [7, -9]], "int32")], False),
    ("%a: Tensor[(0, 3), float32], %i: Tensor[(2), int32]", "adv_index((%a, %i))", [_zeros(0, 3), np.array([0, 1], "int32")], True),
    ("%a: Tensor[(2, 3), float32], %i: Tensor[(2), int32]", "adv_index((%a, %i))", [_DATA, np.array([5, -7], "int32")], False),
    ("%a: Tensor[(2, 3), float32], %i: Tensor[(2), int32]", 'take(%a, %i, axis=1, mode="fast")', [_DATA, np.array([5, -7], "int32")], False),
    (
        "%a: Tensor[(2, 3), float32], %i: Tensor[(2, 3), int32], %u: Tensor[(2, 3), float32]",
        "scatter_elements(%a, %i, %u, axis=1)",
        [_DATA, np.array([[5, -7, 0], [1, 1, 1]], "int32"), _DATA + 10],
        False,
    ),
]


def _batch(cases) -> str:
    closures = ",\n   ".join(f"fn ({params}) {{ {body} }}" for params, body, *_ in cases)
    return f"def @main() {{\n  ({closures},)\n}}"


def _outcome(run):
    try:
        result = run()
        return ("ok", [np.asarray(r) for r in result] if isinstance(result, (list, tuple)) else [np.asarray(result)])
    except EvaluationError as exc:
        return ("error", str(exc))


def _closures(cases, backend):
    """One callable per case from one build (main returns the cases as closures)."""
    return transpile.compile(relay.parse(_batch(cases)), backend=backend)()


def _tir_callables(cases, expected):
    """tir has no closures: the cases the interpreter runs share one build (main takes every
    case's arguments and returns their results); each failing case is built on its own."""
    runs = [None] * len(cases)
    passing = [i for i, want in enumerate(expected) if want[0] == "ok"]
    params, results, offsets = [], [], []
    for i in passing:
        text, body, args, *_ = cases[i]
        renamed_text, renamed_body = text, body
        for name in ("%a", "%w", "%i", "%u"):  # a case's parameter %a becomes %c<i>_a
            renamed_text = renamed_text.replace(name + ":", f"%c{i}_{name[1:]}:")
            renamed_body = renamed_body.replace(name + ")", f"%c{i}_{name[1:]})").replace(name + ",", f"%c{i}_{name[1:]},")
        params.append(renamed_text)
        results.append(renamed_body)
        offsets.append(len(args))
    if passing:
        main = transpile.compile(
            relay.parse(f"def @main({', '.join(params)}) {{ ({', '.join(results)},) }}"), backend="tir"
        )
        outputs = main(*[arg for i in passing for arg in cases[i][2]])
        for position, i in enumerate(passing):
            runs[i] = lambda *args, value=outputs[position]: value
    for i, want in enumerate(expected):
        if want[0] != "ok":
            text, body = cases[i][:2]
            runs[i] = transpile.compile(relay.parse(f"def @main({text}) {{ {body} }}"), backend="tir")
    return runs


def _compare(cases, backend):
    reference = _closures(cases, "interpreter")
    expected = [_outcome(lambda: run(*case[2])) for case, run in zip(cases, reference)]
    compiled = _tir_callables(cases, expected) if backend == "tir" else _closures(cases, backend)
    problems = []
    for (params, body, args, *_), want, got_fn in zip(cases, expected, compiled):
        got = _outcome(lambda: got_fn(*args))
        if want[0] != got[0]:
            problems.append(f"{body}: interpreter {want[0]} {want[1]!s:.100}, {backend} {got[0]} {got[1]!s:.100}")
        elif want[0] == "ok" and not all(
            w.shape == g.shape and np.allclose(w.astype(float), g.astype(float), equal_nan=True)
            for w, g in zip(want[1], got[1])
        ):
            problems.append(f"{body}: interpreter {want[1][0].ravel()[:6]}, {backend} {got[1][0].ravel()[:6]}")
    return problems


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_reductions_over_empty_axes_give_their_identity(backend):
    assert not _compare(EMPTY_REDUCTIONS, backend)


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_out_of_range_indices_raise_or_clamp_like_the_reference(backend):
    reference = _closures(INDEX_CASES, "interpreter")
    for (_, body, args, raises), run in zip(INDEX_CASES, reference):
        assert _outcome(lambda: run(*args))[0] == ("error" if raises else "ok"), body
    assert not _compare(INDEX_CASES, backend)


DYNAMIC_CASES = [
    ("%a: Tensor[(?, ?), float32], %w: Tensor[(?, ?), float32]", "nn.dense(%a, %w, units=None)", [_ones(4, 0), _ones(3, 0)]),
    (
        "%a: Tensor[(?, ?, ?), float32], %w: Tensor[(?, ?, ?), float32]",
        "nn.batch_matmul(%a, %w, transpose_b=True)",
        [_ones(2, 3, 0), _ones(2, 4, 0)],
    ),
    ("%a: Tensor[(3, ?), float32]", "prod(%a, axis=[1])", [_ones(3, 0)]),
    ("%a: Tensor[(?, ?), float32]", "cumsum(%a, axis=1)", [_ones(3, 0)]),
    ("%a: Tensor[(?, ?), float32]", "cumsum(%a, axis=0)", [np.arange(6, dtype=F).reshape(3, 2)]),
    ("%a: Tensor[(2, ?), float32], %i: Tensor[(2, ?), int32]", "gather(%a, %i, axis=1)", [_DATA, np.array([[0], [3]], "int32")]),
    ("%a: Tensor[(2, ?), float32], %i: Tensor[(2, ?), int32]", "gather(%a, %i, axis=1)", [_DATA, np.array([[0], [-3]], "int32")]),
    ("%a: Tensor[(?, 3), float32], %i: Tensor[(1, 2), int32]", "gather_nd(%a, %i)", [_zeros(0, 3), np.array([[0, 1]], "int32")]),
    ("%a: Tensor[(1, 2, ?, ?), float32]", "nn.global_avg_pool2d(%a)", [_zeros(1, 2, 0, 3)]),
]


def test_dynamic_dims_of_size_zero_on_cpp():
    assert not _compare(DYNAMIC_CASES, "cpp")


def test_pools_over_an_empty_spatial_axis_are_type_errors():
    for op in ("nn.global_avg_pool2d(%a)", "nn.adaptive_max_pool2d(%a, output_size=[2, 2])"):
        with pytest.raises(RelayTypeError, match="nothing to pool"):
            transpile.compile(relay.parse(f"def @main(%a: Tensor[(1, 2, 0, 3), float32]) {{ {op} }}"), backend="interpreter")
