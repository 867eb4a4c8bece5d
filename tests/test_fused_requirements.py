"""Requirements of operators fused inside a kernel are checked even when only an intermediate is empty.

An operator's TE lowering may `require(...)` something of its operands' shapes (argmax/argmin of a
non-empty sequence, take from a non-empty axis). With static shapes such a requirement can only
fail on an empty tensor — and in a fused kernel that tensor may be an intermediate
(`argmin(where(c, full(0, [0, 4, 1]), zeros([0, 4, 1])))`: the kernel's parameter is the scalar
`c`, its result a scalar). The cpp backend once looked for empty tensors among a static kernel's
parameters and results only, so such a kernel ran its reduction over nothing (argmin gave
INT32_MAX) or read past a buffer (take), where the interpreter raises. Now it asks the lowering
for every operator's requirements (transpile.backends.cpp.codegen.shapes.may_fail_statically);
tir evaluates them all too (transpile.backends.tir.lowering.checks).

Every case is a branch of one program (one build per backend), selected by its first argument.
"""

from __future__ import annotations

import numpy as np
import pytest

import transpile
from transpile import relay
from transpile.errors import EvaluationError

pytest.importorskip("tvm")

_EMPTY_WHERE_I64 = (
    'where(cast(%s, dtype="bool"), full(0i64, shape=[0, 4, 1], dtype="int64"), zeros(shape=[0, 4, 1], dtype="int64"))'
)
_EMPTY_WHERE_F32 = 'where(cast(%s, dtype="bool"), full(1f, shape=[0, 3], dtype="float32"), zeros(shape=[0, 3], dtype="float32"))'
_EMPTY_ADD = 'add(%v, full(1f, shape=[0, 4], dtype="float32"))'

# (body over %s: int32 and %v: Tensor[(4), float32], the operator that must raise or None)
CASES = [
    (f"argmin({_EMPTY_WHERE_I64})", "argmin"),  # the fuzzer's reproduction, shrunk
    (f"argmax({_EMPTY_WHERE_I64}, axis=[0])", "argmax"),  # a non-empty result (4, 1)
    (f"argmax({_EMPTY_ADD})", "argmax"),
    ('argmin(cast(full(%s, shape=[0, 3], dtype="int32"), dtype="float32"), axis=[0])', "argmin"),
    (f"take({_EMPTY_WHERE_F32}, 0, axis=0)", "take"),
    ('take(add(%v, zeros(shape=[0, 4], dtype="float32")), %s, axis=0)', "take"),
    # what must still run: reductions over non-empty axes of an empty intermediate, empty takes,
    # and the same kernels over non-empty operands
    (f"argmin({_EMPTY_ADD}, axis=[1])", None),
    (f'take({_EMPTY_ADD}, full(0, shape=[0], dtype="int32"), axis=0)', None),
    ('argmin(where(cast(%s, dtype="bool"), full(3i64, shape=[2, 4, 1], dtype="int64"), zeros(shape=[2, 4, 1], dtype="int64")))', None),
    ('argmax(add(%v, full(1f, shape=[3, 4], dtype="float32")), axis=[1])', None),
    ('take(add(%v, zeros(shape=[2, 4], dtype="float32")), %s, axis=0)', None),
]

_ARGS = (np.int32(1), np.arange(4, dtype="float32"))


def _program(cases) -> str:
    """@main(%which, %s, %v): case `%which`'s result as the sum of its elements (one result type)."""
    branch = "0f"
    for index in reversed(range(len(cases))):
        body = f'sum(cast({cases[index][0]}, dtype="float32"))'
        branch = f"if (equal(%which, {index})) {{ {body} }} else {{ {branch} }}"
    return f"def @main(%which: int32, %s: int32, %v: Tensor[(4), float32]) -> float32 {{\n  {branch}\n}}"


def _outcome(run, which):
    try:
        return ("ok", float(np.asarray(run(np.int32(which), *_ARGS))))
    except EvaluationError as exc:
        return ("error", str(exc))


@pytest.fixture(scope="module")
def reference():
    run = transpile.compile(relay.parse(_program(CASES)), backend="interpreter")
    return [_outcome(run, which) for which in range(len(CASES))]


def test_the_interpreter_raises_exactly_for_the_empty_cases(reference):
    for (body, op), (kind, detail) in zip(CASES, reference):
        assert kind == ("error" if op else "ok"), f"{body}: {detail}"
        if op:
            assert f"operator {op} failed" in detail and "empty" in detail


def test_optimizing_keeps_the_failures():
    """FoldConstant & co. must neither drop a failing argmin nor fold it away at compile time."""
    mod = relay.transform.optimize(relay.parse(_program(CASES)), 3)
    run = transpile.compile(mod, backend="interpreter")
    for which, (body, op) in enumerate(CASES):
        assert _outcome(run, which)[0] == ("error" if op else "ok"), body


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_fused_requirements_fail_like_the_interpreter(backend, reference):
    run = transpile.compile(relay.parse(_program(CASES)), backend=backend)
    problems = []
    for which, ((body, op), want) in enumerate(zip(CASES, reference)):
        got = _outcome(run, which)
        if got[0] != want[0]:
            problems.append(f"{body}: interpreter {want[0]} {want[1]!s:.80}, {backend} {got[0]} {got[1]!s:.80}")
        elif op and not (f"{op}: " in got[1] and "empty" in got[1] and got[1].startswith("kernel ")):
            problems.append(f"{body}: {backend} raised {got[1]!s:.200}")
        elif not op and got[1] != want[1]:
            problems.append(f"{body}: interpreter {want[1]}, {backend} {got[1]}")
    assert not problems, "\n".join(problems)


def _kernels_of(body):
    from transpile.pipeline import lower_to_lir

    program = lower_to_lir(relay.parse(f"def @main(%s: int32, %v: Tensor[(4), float32]) {{ {body} }}"))
    return {kernel.name: kernel for kernel in program.kernels}


def test_cpp_checks_a_static_kernel_only_when_a_requirement_can_fail():
    """The failing kernel's parameters and result are all non-empty; kernels whose requirements
    hold (argmin over a non-empty tensor) get no run-time check."""
    from transpile.backends.cpp.codegen.shapes import may_fail_statically
    from transpile.kernels.lower import result_types

    failing = _kernels_of(f"argmin({_EMPTY_WHERE_I64})")
    (kernel,) = [k for k in failing.values() if "argmin" in k.ops]
    shapes = [tuple(p.type.shape) for p in kernel.params] + [tuple(t.shape) for t in result_types(kernel)]
    assert all(0 not in shape for shape in shapes), shapes  # only an intermediate is empty
    assert may_fail_statically(kernel)
    holding = _kernels_of(CASES[8][0])
    assert holding and not any(may_fail_statically(k) for k in holding.values())
