"""The python backend: golden output, safe names, loops, deep recursion, tracebacks, boundary checks, kernels.

Programs are built as LIR by hand (like tests/test_lir.py). Golden files live in
tests/python_golden/; regenerate them with `TRANSPILE_UPDATE_GOLDEN=1 pytest tests/test_python_backend.py`.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import keyword
import linecache
import os
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

import transpile.relay as relay
from transpile.backends.base import read_manifest
from transpile.backends.python import PythonArtifact, PythonBackend
from transpile.backends.python.codegen import IMPORTED_NAMES
from transpile.backends.python.names import Namespace, sanitize
from transpile.errors import EvaluationError, SourceRegistry, Span, TranspileError
from transpile.lir import (
    AdtDef,
    AdtT,
    Block,
    Call,
    Case,
    ClosureCall,
    ClosureT,
    ConstDef,
    ConstRef,
    CtorDef,
    Fail,
    FunctionDef,
    If,
    KernelCall,
    Let,
    Literal,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Param,
    Program,
    RefGet,
    RefNew,
    RefSet,
    RefT,
    TensorType,
    TupleT,
    Var,
    kernel_from_function,
    verify,
)
from transpile.runtime import ADTValue, RefValue

GOLDEN = Path(__file__).parent / "python_golden"
UPDATE = os.environ.get("TRANSPILE_UPDATE_GOLDEN") == "1"

I32 = TensorType((), "int32")
F32 = TensorType((), "float32")
BOOL = TensorType((), "bool")
F2 = TensorType((2,), "float32")
LIST = AdtT("List_int32")
LIST_ADT = AdtDef("List_int32", (CtorDef("Cons", 0, (I32, LIST)), CtorDef("Nil", 1)))

BACKEND = PythonBackend()


def let(name, ty, value, span=None):
    return Let(Var(name, ty), value, span)


def kernel(name, build, *types, names="abcdefgh"):
    params = [relay.var(n, t) for n, t in zip(names, types)]
    return kernel_from_function(name, relay.infer_type_expr(relay.Function(params, build(*params))))


def compile_lir(program):
    return BACKEND.build(program).load()


def to_list(values, dtype="int32"):
    out = ADTValue("Nil")
    for v in reversed(values):
        out = ADTValue("Cons", (np.array(v, dtype=dtype), out))
    return out


def from_list(value):
    items = []
    while value.constructor == "Cons":
        items.append(value.fields[0])
        value = value.fields[1]
    return items


# ---------------------------------------------------------------- the README programs, as LIR


MAP_SOURCE = """\
#[version = "0.0.5"]
def @main(%xs: List[int32]) -> List[int32] {
  map(fn (%x: int32) { add(%x, 1) }, %xs)
}
"""

MAP_PRELUDE = """\
def @map[A, B](%f: fn(A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}
"""


def map_program() -> Program:
    """The Prelude's `map` over List[int32] with an increment lambda (monomorphized, closure-converted)."""
    SourceRegistry.add("map.relay", MAP_SOURCE)
    SourceRegistry.add("prelude.rly", MAP_PRELUDE)
    fn_t = ClosureT((I32,), I32)
    f, xs, x, rest = Var("f", fn_t), Var("xs", LIST), Var("x", I32), Var("rest", LIST)
    cons = Block(
        (
            let("y", I32, ClosureCall(f, (x,)), Span("prelude.rly", 3, 28)),
            let("ys", LIST, Call("map_int32_int32", (f, rest)), Span("prelude.rly", 3, 37)),
            let("r", LIST, MakeAdt("List_int32", "Cons", (Var("y", I32), Var("ys", LIST))), Span("prelude.rly", 3, 17)),
        ),
        Var("r", LIST),
    )
    nil = Block((let("n", LIST, MakeAdt("List_int32", "Nil"), Span("prelude.rly", 4, 12)),), Var("n", LIST))
    map_body = Block(
        (let("m", LIST, Match(xs, (Case("Cons", (x, rest), cons), Case("Nil", (), nil))), Span("prelude.rly", 2, 3)),),
        Var("m", LIST),
    )
    lam_x = Var("x1", I32)
    lam_body = Block(
        (let("z", I32, KernelCall("fused_add", (lam_x, Literal(1, I32))), Span("map.relay", 3, 25)),), Var("z", I32)
    )
    main = Block(
        (
            let("f", fn_t, MakeClosure("lambda_0", ()), Span("map.relay", 3, 7)),
            let("out", LIST, Call("map_int32_int32", (f, xs), tail=True), Span("map.relay", 3, 3)),
        ),
        Var("out", LIST),
    )
    return Program(
        adts=(LIST_ADT,),
        constants=(),
        kernels=(kernel("fused_add", lambda a, b: a + b, I32, I32, names=("x", "y")),),
        functions=(
            FunctionDef(
                "map_int32_int32",
                (Param("f", fn_t), Param("xs", LIST)),
                LIST,
                map_body,
                relay_name="map",
                span=Span("prelude.rly", 1, 1),
            ),
            FunctionDef("lambda_0", (Param("x1", I32),), I32, lam_body, env=(), relay_name="main"),
            FunctionDef("main", (Param("xs", LIST),), LIST, main, relay_name="main", span=Span("map.relay", 2, 1)),
        ),
    )


CLOSURE_SOURCE = """\
#[version = "0.0.5"]
def @main(%k: Tensor[(2), float32], %x: Tensor[(2), float32], %n: int32) {
  let %count = ref(0);
  let %scale = fn (%v: Tensor[(2), float32]) { %count := add(%count^, 1); multiply(%v, %k) };
  let %repeat = fn (%i: int32, %acc: Tensor[(2), float32]) -> Tensor[(2), float32] {
    if (greater(%i, 0)) { %repeat(subtract(%i, 1), %scale(%acc)) } else { %acc }
  };
  (%repeat(%n, %x), %count^)
}
"""


def closure_program() -> Program:
    """Closures capturing a tensor and a ref; a local tail-recursive loop closure calling another closure."""
    SourceRegistry.add("closure.relay", CLOSURE_SOURCE)
    span = lambda line, col=3: Span("closure.relay", line, col)  # noqa: E731
    scale_t = ClosureT((F2,), F2)
    repeat_t = ClosureT((I32, F2), F2)
    counter_t = RefT(I32)
    k, x, n, count = Var("k", F2), Var("x", F2), Var("n", I32), Var("count", counter_t)
    v, old, new = Var("v", F2), Var("old", I32), Var("new", I32)
    scale_body = Block(
        (
            let("old", I32, RefGet(count), span(4, 48)),
            let("new", I32, KernelCall("fused_add", (old, Literal(1, I32))), span(4, 48)),
            let("_", TupleT(()), RefSet(count, new), span(4, 39)),
            let("scaled", F2, KernelCall("fused_multiply", (v, k)), span(4, 73)),
        ),
        Var("scaled", F2),
    )
    i, acc, scale = Var("i", I32), Var("acc", F2), Var("scale", scale_t)
    then = Block(
        (
            let("i1", I32, KernelCall("fused_subtract", (i, Literal(1, I32))), span(6, 27)),
            let("acc1", F2, ClosureCall(scale, (acc,)), span(6, 45)),
            let("res", F2, Call("repeat", (Var("i1", I32), Var("acc1", F2)), tail=True), span(6, 19)),
        ),
        Var("res", F2),
    )
    repeat_body = Block(
        (
            let("more", BOOL, KernelCall("fused_greater", (i, Literal(0, I32))), span(6, 9)),
            let("out", F2, If(Var("more", BOOL), then, Block((), acc)), span(6, 5)),
        ),
        Var("out", F2),
    )
    main = Block(
        (
            let("count", counter_t, RefNew(Literal(0, I32)), span(3)),
            let("scale", scale_t, MakeClosure("scale", (count, k)), span(4)),
            let("repeat", repeat_t, MakeClosure("repeat", (scale,)), span(5)),
            let("y", F2, ClosureCall(Var("repeat", repeat_t), (n, x)), span(8)),
            let("c", I32, RefGet(count), span(8, 21)),
            let("pair", TupleT((F2, I32)), MakeTuple((Var("y", F2), Var("c", I32))), span(8)),
        ),
        Var("pair", TupleT((F2, I32))),
    )
    return Program(
        adts=(),
        constants=(),
        kernels=(
            kernel("fused_add", lambda a, b: a + b, I32, I32),
            kernel("fused_multiply", lambda a, b: a * b, F2, F2),
            kernel("fused_subtract", lambda a, b: a - b, I32, I32),
            kernel("fused_greater", lambda a, b: relay.greater(a, b), I32, I32),
        ),
        functions=(
            FunctionDef(
                "scale", (Param("v", F2),), F2, scale_body, env=(Param("count", counter_t), Param("k", F2)),
                relay_name="main",
            ),
            FunctionDef(
                "repeat", (Param("i", I32), Param("acc", F2)), F2, repeat_body, env=(Param("scale", scale_t),),
                relay_name="main",
            ),
            FunctionDef(
                "main",
                (Param("k", F2), Param("x", F2), Param("n", I32)),
                TupleT((F2, I32)),
                main,
                relay_name="main",
                span=Span("closure.relay", 2, 1),
            ),
        ),
    )


MLP_SOURCE = """\
#[version = "0.0.5"]
def @main(%x: Tensor[(1, 784), float32], %w1: Tensor[(128, 784), float32], %b1: Tensor[(128), float32],
          %w2: Tensor[(10, 128), float32], %b2: Tensor[(10), float32]) {
  %0 = nn.dense(%x, %w1, units=128);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.relu(%1);
  %3 = nn.dense(%2, %w2, units=10);
  %4 = nn.bias_add(%3, %b2);
  nn.softmax(%4)
}
"""

X, W1, B1, H, W2, B2, Y = (
    TensorType(s, "float32") for s in ((1, 784), (128, 784), (128,), (1, 128), (10, 128), (10,), (1, 10))
)


def mlp_program() -> Program:
    """A 784-128-10 perceptron: dense+bias+relu, dense+bias, softmax (FuseOps groups)."""
    SourceRegistry.add("mlp.relay", MLP_SOURCE)

    def layer1(x, w, b):
        return relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w, units=128), b))

    def layer2(h, w, b):
        return relay.nn.bias_add(relay.nn.dense(h, w, units=10), b)

    main = Block(
        (
            let("h", H, KernelCall("fused_dense_bias_add_relu", tuple(Var(*p) for p in (("x", X), ("w1", W1), ("b1", B1)))), Span("mlp.relay", 4, 8)),
            let("logits", Y, KernelCall("fused_dense_bias_add", (Var("h", H), Var("w2", W2), Var("b2", B2))), Span("mlp.relay", 7, 8)),
            let("probs", Y, KernelCall("fused_softmax", (Var("logits", Y),)), Span("mlp.relay", 9, 3)),
        ),
        Var("probs", Y),
    )
    params = tuple(Param(n, t) for n, t in (("x", X), ("w1", W1), ("b1", B1), ("w2", W2), ("b2", B2)))
    return Program(
        adts=(),
        constants=(),
        kernels=(
            kernel("fused_dense_bias_add_relu", layer1, X, W1, B1, names=("x", "w", "b")),
            kernel("fused_dense_bias_add", layer2, H, W2, B2, names=("x", "w", "b")),
            kernel("fused_softmax", lambda x: relay.nn.softmax(x), Y, names=("x",)),
        ),
        functions=(FunctionDef("main", params, Y, main, relay_name="main", span=Span("mlp.relay", 2, 1)),),
    )


def mlp_inputs(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(1, 784), (128, 784), (128,), (10, 128), (10,)]
    return [rng.standard_normal(s).astype("float32") * 0.1 for s in shapes]


def mlp_expected(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1.T + b1, 0)
    z = h @ w2.T + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


GOLDEN_PROGRAMS = {"map": map_program, "closure": closure_program, "mlp": mlp_program}


# ---------------------------------------------------------------- golden files and determinism


@pytest.mark.parametrize("name", list(GOLDEN_PROGRAMS))
def test_golden_output(name):
    program = GOLDEN_PROGRAMS[name]()
    verify(program)
    source = BACKEND.emit(program)
    path = GOLDEN / f"{name}.py"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(source, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with TRANSPILE_UPDATE_GOLDEN=1"
    assert source == path.read_text(encoding="utf-8"), f"{name}: output differs from {path}"
    assert BACKEND.emit(GOLDEN_PROGRAMS[name]()) == source  # deterministic


def test_golden_programs_compute_the_right_values():
    f = compile_lir(map_program())
    got = f(to_list([1, 2, 40]))
    assert [a.item() for a in from_list(got)] == [2, 3, 41]
    assert all(type(a) is np.ndarray and a.dtype == np.int32 and a.shape == () for a in from_list(got))

    g = compile_lir(closure_program())
    y, count = g(np.array([1.0, -2.0], "float32"), np.array([0.5, 3.0], "float32"), 3)
    np.testing.assert_array_equal(y, np.array([0.5, 3.0], "float32") * np.array([1.0, -2.0], "float32") ** 3)
    assert y.dtype == np.float32 and count.dtype == np.int32 and count.shape == () and count == 3

    m = compile_lir(mlp_program())
    inputs = mlp_inputs()
    probs = m(*inputs)
    assert probs.dtype == np.float32 and probs.shape == (1, 10)
    np.testing.assert_allclose(probs, mlp_expected(*inputs), rtol=1e-5, atol=1e-6)


def test_readable_shapes_of_the_output():
    map_src = BACKEND.emit(map_program())
    assert "def map_int32_int32(f, xs):" in map_src
    assert 'if xs.constructor == "Cons":\n        x, rest = xs.fields' in map_src
    assert 'ADTValue("Cons", (y, ys))' in map_src and 'ADTValue("Nil")' in map_src
    assert "# prelude.rly:3: Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest))," in map_src
    assert "def lambda_0(x1):" in map_src and "f = lambda_0\n" in map_src
    mlp_src = BACKEND.emit(mlp_program())
    assert "def fused_dense_bias_add_relu(x, w1, b1):" in mlp_src  # parameters named after the call site
    assert "t0 = x @ w1.T\n    t1 = t0 + b1\n    return np.maximum(t1, 0)" in mlp_src
    assert 'return ops.nn.softmax(logits, out=((1, 10), "float32"))' in mlp_src
    assert "# mlp.relay:9: nn.softmax(%4)" in mlp_src
    closure_src = BACKEND.emit(closure_program())
    assert "def make_repeat(scale):" in closure_src and "while True:" in closure_src
    assert "count.value = new" in closure_src and "i, acc = i1, acc1" in closure_src


def test_generated_module_imports_only_numpy_and_the_runtime():
    for build in GOLDEN_PROGRAMS.values():
        tree = ast.parse(BACKEND.emit(build()))
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                modules.add(node.module)
        assert modules <= {"numpy", "transpile.runtime", "transpile.runtime.python_support"}, modules


# ---------------------------------------------------------------- names


NASTY = ["class", "print", "np", "a-b", "a_b", "1x", "é", "__init__", "", "ops", "ADTValue", "main", "sum", "match", "_"]
NASTY += ['q"""\\\n', "make_lambda", "fused_add"]


def nasty_program() -> Program:
    """Every function, kernel, parameter and let named with a string that is unsafe in Python.

    Function i adds i to its argument (kernel `<name>?`) and passes the sum to function i + 1.
    """
    functions, kernels = [], []
    for i, name in enumerate(NASTY):
        p, r, out = Var(name, I32), Var(name + "!", I32), Var(name + ".", I32)
        kernels.append(kernel(name + "?", lambda a, b: a + b, I32, I32, names=(name or "q", "len")))
        stmts = [let(r.name, I32, KernelCall(name + "?", (p, Literal(i, I32))))]
        if i + 1 < len(NASTY):
            stmts.append(let(out.name, I32, Call(NASTY[i + 1], (r,))))
            result = out
        else:
            result = r
        functions.append(FunctionDef(name, (Param(name, I32),), I32, Block(tuple(stmts), result)))
    return Program(adts=(), constants=(), kernels=tuple(kernels), functions=tuple(functions), entry=NASTY[0])


def test_any_name_is_safe():
    program = nasty_program()
    verify(program)
    artifact = BACKEND.build(program)
    tree = ast.parse(artifact.source)
    forbidden = set(dir(builtins)) | set(keyword.kwlist) | set(keyword.softkwlist) | set(IMPORTED_NAMES)
    bound = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            bound.append(node.name)
            bound.extend(a.arg for a in node.args.args)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.append(node.id)
    assert bound and not (set(bound) & forbidden), set(bound) & forbidden
    assert all(name.isascii() and name.isidentifier() and not name.startswith("__") for name in bound)
    defs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert len(defs) == len(set(defs)) == len(NASTY) * 2
    assert "class_" in defs and "print_" in defs and "a_b" in defs and "a_b_1" in defs and "init" in defs
    # Each function adds its index to its argument and passes it on: 0 + 1 + ... + 14.
    assert compile_lir(program)(5) == 5 + sum(range(len(NASTY)))


def test_sanitize_and_namespace():
    assert [sanitize(n) for n in ["a-b", "1x", "é", "__init__", "", "x.y.z", "ok_1"]] == [
        "a_b",
        "v1x",
        "e",
        "init",
        "v",
        "x_y_z",
        "ok_1",
    ]
    ns = Namespace(["np"])
    assert [ns.fresh(n) for n in ["np", "print", "a-b", "a_b", "a b", "lambda"]] == [
        "np_1",
        "print_",
        "a_b",
        "a_b_1",
        "a_b_2",
        "lambda_",
    ]


# ---------------------------------------------------------------- loops, recursion, tracebacks


def loop_program(tail=True) -> Program:
    n, c = Var("n", I32), Var("c", BOOL)
    then = Block(
        (let("m", I32, KernelCall("fused_subtract", (n, Literal(1, I32)))), let("z", I32, Call("count", (Var("m", I32),), tail))),
        Var("z", I32),
    )
    stmts = (
        let("c", BOOL, KernelCall("fused_greater", (n, Literal(0, I32)))),
        let("r", I32, If(c, then, Block((), n))),
    )
    main = Block((let("r", I32, Call("count", (n,), tail=True)),), Var("r", I32))
    return Program(
        adts=(),
        constants=(),
        kernels=(
            kernel("fused_greater", lambda a, b: relay.greater(a, b), I32, I32),
            kernel("fused_subtract", lambda a, b: a - b, I32, I32),
        ),
        functions=(
            FunctionDef("count", (Param("n", I32),), I32, Block(stmts, Var("r", I32))),
            FunctionDef("main", (Param("n", I32),), I32, main),
        ),
    )


def test_self_tail_calls_are_loops_that_run_a_million_steps():
    artifact = BACKEND.build(loop_program())
    assert "while True:" in artifact.source and "continue" in artifact.source
    assert artifact.signature["big_stack"] is False
    f = artifact.load()
    start = time.perf_counter()
    result = f(1_000_000)
    elapsed = time.perf_counter() - start
    assert type(result) is np.ndarray and result.dtype == np.int32 and result.shape == () and result == 0
    assert elapsed < 60, f"a 10**6-step loop took {elapsed:.1f}s"


def test_non_tail_recursion_10000_deep():
    program = loop_program(tail=False)
    artifact = BACKEND.build(program)
    assert "while True" not in artifact.source and artifact.signature["big_stack"] is True
    assert artifact.load()(10_000) == 0


def sum_program() -> Program:
    xs, h, t = Var("xs", LIST), Var("h", I32), Var("t", LIST)
    cons = Block(
        (let("r", I32, Call("sum", (t,))), let("s", I32, KernelCall("fused_add", (h, Var("r", I32))))), Var("s", I32)
    )
    body = Block(
        (let("0", I32, Match(xs, (Case("Cons", (h, t), cons), Case("Nil", (), Block((), Literal(0, I32)))))),),
        Var("0", I32),
    )
    main = Block((let("y", I32, Call("sum", (xs,), tail=True)),), Var("y", I32))
    return Program(
        adts=(LIST_ADT,),
        constants=(),
        kernels=(kernel("fused_add", lambda a, b: a + b, I32, I32),),
        functions=(FunctionDef("sum", (Param("xs", LIST),), I32, body), FunctionDef("main", (Param("xs", LIST),), I32, main)),
    )


def test_deep_list_recursion_and_results_are_arrays():
    f = compile_lir(sum_program())
    result = f(to_list(list(range(10_000))))
    assert type(result) is np.ndarray and result.dtype == np.int32 and int(result) == sum(range(10_000))
    empty = f(ADTValue("Nil"))
    assert type(empty) is np.ndarray and empty.dtype == np.int32 and empty.shape == () and empty == 0


def failing_program() -> Program:
    SourceRegistry.add("fail.relay", 'def @main(%o: Option[int32]) {\n  match? (%o) { Some(%v) => %v }\n}\n')
    opt = AdtT("Option_int32")
    o, v = Var("o", opt), Var("v", I32)
    body = Block(
        (
            let(
                "r",
                I32,
                Match(o, (Case("Some", (v,), Block((), v)),), Block((let("e", I32, Fail("no case matched None", I32)),), Var("e", I32))),
                Span("fail.relay", 2, 3),
            ),
        ),
        Var("r", I32),
    )
    adt = AdtDef("Option_int32", (CtorDef("Some", 0, (I32,)), CtorDef("None", 1)))
    return Program(adts=(adt,), constants=(), kernels=(), functions=(FunctionDef("main", (Param("o", opt),), I32, body),))


def test_tracebacks_show_generated_lines_and_source_comments():
    artifact = BACKEND.build(failing_program())
    f = artifact.load()
    assert f(ADTValue("Some", (np.array(4, "int32"),))) == 4
    with pytest.raises(EvaluationError, match="no case matched None") as info:
        f(ADTValue("None"))
    frames = [fr for fr in traceback.extract_tb(info.value.__traceback__) if fr.filename == artifact.filename]
    assert frames and artifact.filename.startswith("<transpile:main:")
    assert frames[-1].line == 'raise EvaluationError("no case matched None")'
    assert linecache.getline(artifact.filename, frames[-1].lineno).strip() == frames[-1].line
    assert "# fail.relay:2: match? (%o) { Some(%v) => %v }" in artifact.source


# ---------------------------------------------------------------- the boundary


def test_argument_checks_name_the_problem():
    f = compile_lir(closure_program())
    k, x = np.ones(2, "float32"), np.ones(2, "float32")
    cases = [
        ((k, x), r"expects 3 argument\(s\) but got 2"),
        ((k, x.astype("float64"), 1), r"argument 2 of @main\(%k, %x, %n\): expected Tensor\[\(2\), float32\] but got an array of shape \(2,\) and dtype float64"),
        ((k, np.ones(3, "float32"), 1), r"argument 2 .* expected Tensor\[\(2\), float32\] but got an array of shape \(3,\)"),
        ((k, x, 1.5), r"argument 3 .* expected Tensor\[\(\), int32\] .*not representable exactly as int32"),
        ((k, x, 2**40), r"argument 3 .*out of the range of int32"),
        ((k, x, "3"), r"argument 3 .* expected Tensor\[\(\), int32\] but got a str"),
    ]
    for args, message in cases:
        with pytest.raises(EvaluationError, match=message):
            f(*args)
    with pytest.raises(EvaluationError, match="positional"):
        f(k, x, n=1)
    # numpy scalars, Python numbers and DLPack tensors convert without loss
    y, _ = f(k, x, np.int32(2))
    np.testing.assert_array_equal(y, x)

    class Foreign:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    y, count = f(Foreign(np.full(2, 2.0, "float32")), Foreign(x), 3.0)
    np.testing.assert_array_equal(y, np.full(2, 8.0, "float32"))
    assert count == 3


def test_adt_arguments_are_checked_deeply():
    f = compile_lir(sum_program())
    with pytest.raises(EvaluationError, match=r"constructor Snoc is not one of Cons, Nil"):
        f(ADTValue("Snoc", ()))
    bad = ADTValue("Cons", (np.array(1, "int32"), ADTValue("Cons", (np.array(2.0, "float32"), ADTValue("Nil")))))
    with pytest.raises(EvaluationError, match=r"field 0 of Cons of field 1 of Cons of argument 1 .*float32"):
        f(bad)
    with pytest.raises(EvaluationError, match=r"Cons takes 2 field\(s\), got 1"):
        f(ADTValue("Cons", (np.array(1, "int32"),)))
    with pytest.raises(EvaluationError, match="expected List_int32 but got a tuple"):
        f((1, 2))
    assert f(to_list([1, 2, 3])) == 6
    # Python numbers inside ADT fields convert too
    assert f(ADTValue("Cons", (7, ADTValue("Nil")))) == 7


def closure_io_program() -> Program:
    """main(g: fn(f32[2]) -> f32[2], k: f32[2]) -> fn(f32[2]) -> f32[2]: returns x => g(x) * k."""
    fn_t = ClosureT((F2,), F2)
    g, k, x = Var("g", fn_t), Var("k", F2), Var("x", F2)
    body = Block(
        (let("gx", F2, ClosureCall(g, (x,))), let("y", F2, KernelCall("fused_multiply", (Var("gx", F2), k)))),
        Var("y", F2),
    )
    main = Block((let("h", fn_t, MakeClosure("times_k", (g, k))),), Var("h", fn_t))
    return Program(
        adts=(),
        constants=(),
        kernels=(kernel("fused_multiply", lambda a, b: a * b, F2, F2),),
        functions=(
            FunctionDef("times_k", (Param("x", F2),), F2, body, env=(Param("g", fn_t), Param("k", F2))),
            FunctionDef("main", (Param("g", fn_t), Param("k", F2)), fn_t, main),
        ),
    )


def test_closures_cross_the_boundary_checked():
    f = compile_lir(closure_io_program())
    h = f(lambda v: v + 1, np.array([2.0, 3.0], "float32"))
    np.testing.assert_array_equal(h(np.array([1.0, 1.0], "float32")), np.array([4.0, 6.0], "float32"))
    with pytest.raises(EvaluationError, match=r"argument 1 of the returned closure: expected Tensor\[\(2\), float32\]"):
        h(np.ones(3, "float32"))
    bad = f(lambda v: v.astype("float64"), np.ones(2, "float32"))
    with pytest.raises(EvaluationError, match=r"the result of the function passed as argument 1 .*float64"):
        bad(np.ones(2, "float32"))
    with pytest.raises(EvaluationError, match="expected closure"):
        f(3, np.ones(2, "float32"))


def ref_program() -> Program:
    """main(r: ref(int32)) -> int32: r := r^ + 1; returns the old value."""
    r, old, new = Var("r", RefT(I32)), Var("old", I32), Var("new", I32)
    body = Block(
        (
            let("old", I32, RefGet(r)),
            let("new", I32, KernelCall("fused_add", (old, Literal(1, I32)))),
            let("u", TupleT(()), RefSet(r, new)),
        ),
        old,
    )
    return Program(
        adts=(),
        constants=(),
        kernels=(kernel("fused_add", lambda a, b: a + b, I32, I32),),
        functions=(FunctionDef("main", (Param("r", RefT(I32)),), I32, body),),
    )


def test_refs_passed_in_are_shared_and_converted():
    f = compile_lir(ref_program())
    cell = RefValue(41)
    assert f(cell) == 41
    assert type(cell.value) is np.ndarray and cell.value.dtype == np.int32 and cell.value == 42
    with pytest.raises(EvaluationError, match=r"the contents of argument 1 .*expected Tensor\[\(\), int32\] but got a str"):
        f(RefValue("x"))


# ---------------------------------------------------------------- kernels


def reference(call_builder, arrays):
    """The registry's numpy implementation, through the reference interpreter."""
    params = [relay.var(f"p{i}", relay.TensorType(a.shape, a.dtype.name)) for i, a in enumerate(arrays)]
    mod = relay.IRModule.from_expr(relay.Function(params, call_builder(*params)))
    return relay.evaluate(mod, *arrays)


KERNEL_CASES = {
    "add_int32_wraps": (lambda a, b: a + b, [np.array([2**31 - 1, 5], "int32"), np.array([1, -7], "int32")]),
    "divide_int_truncates": (lambda a, b: relay.divide(a, b), [np.array([-7, 7], "int32"), np.array([2, -2], "int32")]),
    "divide_float": (lambda a, b: relay.divide(a, b), [np.array([1.0, -1.0, 0.0], "float32"), np.array([0.0, 3.0, 0.0], "float32")]),
    "relu_sigmoid": (lambda a: relay.sigmoid(relay.nn.relu(a)), [np.array([-1.0, 0.5, 3.0], "float32")]),
    "dense_bias_4d": (
        lambda x, w, b: relay.nn.bias_add(relay.reshape(relay.nn.dense(x, w), (1, 2, 3, 1)), b, axis=1),
        [np.arange(12, dtype="float32").reshape(3, 4), np.ones((2, 4), "float32"), np.array([10.0, 20.0], "float32")],
    ),
    "scalar_compare": (lambda a, b: relay.less(a, b), [np.array(1.5, "float32"), np.array(2.0, "float32")]),
    "cast_where": (
        lambda c, a: relay.where(c, relay.cast(a, "int32"), relay.const(7)),
        [np.array([True, False, True]), np.array([1.9, -2.5, np.nan], "float32")],
    ),
    "transpose_mean": (lambda a: relay.mean(relay.transpose(a, (1, 0)), axis=1), [np.arange(6, dtype="float32").reshape(2, 3)]),
    "softmax_float16": (lambda a: relay.nn.softmax(a), [np.array([[1.0, 2.0, 3.0]], "float16")]),
    "split_tuple": (lambda a: relay.Tuple([relay.split(a, 2)[1], relay.exp(a)]), [np.array([0.0, 1.0], "float32")]),
    "scalar_param_returned": (lambda a: relay.Tuple([a, relay.negative(a)]), [np.array(3, "int8")]),
}


@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_kernels_compute_what_the_registry_computes(name):
    build, arrays = KERNEL_CASES[name]
    types = [TensorType(a.shape, a.dtype.name) for a in arrays]
    k = kernel("fused_k", build, *types)
    params = tuple(Param(f"p{i}", t) for i, t in enumerate(types))
    from transpile.lir import from_relay_type

    result_type = from_relay_type(k.body.body.checked_type)
    body = Block((let("out", result_type, KernelCall("fused_k", tuple(p.var() for p in params))),), Var("out", result_type))
    program = Program(adts=(), constants=(), kernels=(k,), functions=(FunctionDef("main", params, result_type, body),))
    got = compile_lir(program)(*arrays)
    expected = reference(build, arrays)
    got_items = got if isinstance(got, tuple) else (got,)
    expected_items = expected if isinstance(expected, tuple) else (expected,)
    assert len(got_items) == len(expected_items)
    for value, want in zip(got_items, expected_items):
        assert type(value) is np.ndarray and value.dtype == want.dtype and value.shape == want.shape
        np.testing.assert_array_equal(value, want)  # NaN equals NaN here, bits of every other value must agree


def test_constants_inline_and_embedded():
    big = np.arange(100, dtype="float32").reshape(10, 10) / 7
    small = np.array([0.1, -2.5], "float32")
    T100, T2 = TensorType((10, 10), "float32"), F2
    body = Block(
        (
            let("s", T2, KernelCall("fused_add", (ConstRef("small", T2), Var("x", T2)))),
            let("pair", TupleT((T2, T100)), MakeTuple((Var("s", T2), ConstRef("big", T100)))),
        ),
        Var("pair", TupleT((T2, T100))),
    )
    program = Program(
        adts=(),
        constants=(ConstDef("small", small, T2), ConstDef("big", big, T100)),
        kernels=(kernel("fused_add", lambda a, b: a + b, T2, T2),),
        functions=(FunctionDef("main", (Param("x", T2),), TupleT((T2, T100)), body),),
    )
    source = BACKEND.emit(program)
    assert "small = np.array([0.1, -2.5], dtype=np.float32)" in source
    assert '\n# Large constants: raw little-endian bytes, base64-encoded\nbig = decode_constant("float32", (10, 10), "AAAAACVJEj4lSZI+' in source
    assert source.index("def main(") < source.index("big = decode_constant")  # bulky data last
    s, b = compile_lir(program)(np.zeros(2, "float32"))
    np.testing.assert_array_equal(s, small)
    np.testing.assert_array_equal(b, big)


# ---------------------------------------------------------------- artifacts


def test_export_and_load(tmp_path):
    artifact = BACKEND.build(mlp_program())
    directory = artifact.export(tmp_path / "mlp")
    assert (directory / "program.py").read_text() == artifact.source
    manifest_dir, manifest = read_manifest(directory)
    assert manifest["backend"] == "python" and manifest["entry"] == "main"
    assert manifest["data"]["source"] == "program.py" and manifest["data"]["signature"]["function"] == "main"
    loaded = BACKEND.load_artifact(manifest_dir, manifest)
    assert isinstance(loaded, PythonArtifact) and loaded.filename == str((directory / "program.py").resolve())
    inputs = mlp_inputs(1)
    np.testing.assert_allclose(loaded.load()(*inputs), mlp_expected(*inputs), rtol=1e-5, atol=1e-6)
    with pytest.raises(EvaluationError, match=r"argument 1 of @main\(%x, %w1, %b1, %w2, %b2\)"):
        loaded.load()(np.zeros((2, 784), "float32"), *inputs[1:])


def test_options_and_invalid_programs_are_reported():
    with pytest.raises(TranspileError, match="does not take option"):
        BACKEND.emit(map_program(), fast=True)
    broken = dataclasses.replace(sum_program(), entry="nope")
    with pytest.raises(TranspileError, match="entry @nope is not a defined function"):
        BACKEND.emit(broken)


# ---------------------------------------------------------------- end to end: Relay text -> pipeline -> python


def relay_compile(text, name="prog.relay", prelude=False, entry="main"):
    from transpile.backends import api

    base = relay.IRModule()
    if prelude:
        relay.Prelude(base)
    mod = relay.parse(text, source_name=name, init_module=base)
    return api.build(mod, backend=BACKEND, entry=entry)


def test_end_to_end_prelude_map_and_foldl():
    artifact = relay_compile(
        """#[version = "0.0.5"]
def @main(%xs: List[int32]) -> (List[int32], int32) {
  let %ys = @map(fn (%x: int32) { multiply(%x, 3) }, %xs);
  (%ys, @foldl(fn (%a: int32, %b: int32) { add(%a, %b) }, 0, %ys))
}
""",
        prelude=True,
    )
    ys, total = artifact.load()(to_list([1, 2, 3]))
    assert [int(v) for v in from_list(ys)] == [3, 6, 9] and total == 18 and total.dtype == np.int32
    assert "def map__" in artifact.source or "def map_" in artifact.source


def test_end_to_end_local_loop_is_a_while_loop_and_recursion_is_deep():
    loop = relay_compile(
        """#[version = "0.0.5"]
def @main(%n: int32) -> int32 {
  let %loop = fn (%i: int32, %acc: int32) -> int32 {
    if (greater(%i, 0)) { %loop(subtract(%i, 1), add(%acc, 1)) } else { %acc }
  };
  %loop(%n, 0)
}
"""
    )
    assert "while True:" in loop.source
    assert loop.load()(100_000) == 100_000
    deep = relay_compile(
        """#[version = "0.0.5"]
def @count(%n: int32) -> int32 {
  if (equal(%n, 0)) { 0 } else { add(@count(subtract(%n, 1)), 1) }
}
def @main(%n: int32) -> int32 { @count(%n) }
"""
    )
    assert deep.load()(10_000) == 10_000


def test_end_to_end_cnn_uses_registry_operators():
    artifact = relay_compile(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 1, 5, 5), float32], %w: Tensor[(2, 1, 3, 3), float32], %b: Tensor[(2), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=2, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  nn.batch_flatten(%3)
}
""",
        name="cnn.relay",
    )
    assert "ops.nn.conv2d(" in artifact.source and "padding=(1, 1, 1, 1)" in artifact.source
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in ((1, 1, 5, 5), (2, 1, 3, 3), (2,)))
    padded = np.pad(x[0, 0], 1)
    conv = np.array([[[np.sum(padded[i : i + 3, j : j + 3] * w[o, 0]) for j in range(5)] for i in range(5)] for o in range(2)])
    act = np.maximum(conv + b[:, None, None], 0)
    pooled = act[:, :4, :4].reshape(2, 2, 2, 2, 2).max(axis=(2, 4))
    got = artifact.load()(x, w, b)
    assert got.shape == (1, 8) and got.dtype == np.float32
    np.testing.assert_allclose(got, pooled.reshape(1, 8), rtol=1e-5, atol=1e-5)


def test_end_to_end_errors_before_running():
    artifact = relay_compile(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 2), float32], %y: Tensor[(2, 2), float32]) { add(%x, %y) }
"""
    )
    f = artifact.load()
    np.testing.assert_array_equal(f(np.ones((2, 2), "float32"), np.eye(2, dtype="float32")), np.ones((2, 2)) + np.eye(2))
    with pytest.raises(EvaluationError, match=r"argument 2 of @main\(%x, %y\): expected Tensor\[\(2, 2\), float32\]"):
        f(np.ones((2, 2), "float32"), np.ones((2, 3), "float32"))
    with pytest.raises(EvaluationError, match="expects 2 argument"):
        f(np.ones((2, 2), "float32"))


def test_runtime_ops_names_and_errors():
    from transpile.runtime import ops

    # Operators named like builtins (any, all, sum) must not disturb later lookups.
    assert ops.any(np.array([False, True]), out=((), "bool")) == np.True_
    assert ops.sum(np.arange(4, dtype="int32"), out=((), "int32")).dtype == np.int32
    assert ops.nn.relu is ops.op("nn.relu") and repr(ops.nn.relu) == "<transpile operator nn.relu>"
    got = ops.op("nn.softmax")(np.zeros((1, 2), "float32"), axis=1, out=((1, 2), "float32"))
    np.testing.assert_array_equal(got, np.full((1, 2), 0.5, "float32"))
    with pytest.raises(AttributeError, match="no operator or namespace 'nn.nope'"):
        ops.nn.nope


def test_tuples_refs_and_adt_fields_of_the_lir_data_program():
    from test_lir import data_program  # the LIR tests' program: refs, tuples, projections, a default case

    program = data_program()
    source = BACKEND.emit(program)
    assert "pair = (d, old)" in source and "first = pair[0]" in source and "g2 = o.fields[0]" in source
    assert 'if o.constructor == "Some":' in source and 'raise EvaluationError("unreachable")' in source
    x, b = np.arange(4, dtype="float32").reshape(1, 4) - 2, np.array([1.0, -100.0, 0.5], "float32")
    got, same = compile_lir(program)(x, b)
    w0 = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(got, np.maximum(x @ w0.T + b, 0))
    assert same is x


def test_format_false_skips_black_and_runs_the_same():
    import transpile

    mod = relay.parse('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 2), float32]) { nn.relu(add(%x, %x)) }')
    x = np.array([[1, -2], [3, -4]], "float32")
    formatted = transpile.emit(mod, backend="python")
    plain = transpile.emit(mod, backend="python", format=False)
    assert plain != formatted
    np.testing.assert_array_equal(transpile.compile(mod, backend="python", format=False)(x), transpile.compile(mod, backend="python")(x))
