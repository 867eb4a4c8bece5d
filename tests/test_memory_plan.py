"""Static memory planning (transpile.passes.memory_plan): what is planned, what escapes, and that
planned programs still compute the right values when every planned tensor really lives in a
shared, poisoned arena (a LIR evaluator below writes kernel results there and reads them back)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import transpile.relay as relay
from transpile.lir import (
    AtomValue,
    Block,
    FunctionDef,
    Let,
    Param,
    TupleT,
    Var,
    Call,
    ClosureCall,
    If,
    KernelCall,
    MakeAdt,
    MakeClosure,
    MakeTuple,
    Match,
    Proj,
    RefNew,
    RefSet,
    iter_lets,
)
from transpile.lir.types import TensorType
from transpile.passes.memory_plan import ALIGNMENT, plan_function, plan_memory, tensor_nbytes
from transpile.pipeline import lower_to_lir
from transpile.runtime import ADTValue, RefValue, values_equal

from test_pass_lower import LirClosure, _atom, _kernel, _value, run_lir

HEADER = '#[version = "0.0.5"]\n'
T28, T88 = TensorType((2, 8), "float32"), TensorType((8, 8), "float32")


def program_of(src: str, prelude: bool = False):
    init = None
    if prelude:
        init = relay.IRModule()
        relay.Prelude(init)
    return lower_to_lir(relay.parse(HEADER + src, init_module=init))


def kernel_lets(func, kernel_prefix: str) -> list[str]:
    return [
        s.var.name
        for s in iter_lets(func.body)
        if isinstance(s.value, KernelCall) and s.value.kernel.startswith(kernel_prefix)
    ]


# ---------------------------------------------------------------- an evaluator that uses the plan


class PlannedRun:
    """Runs a program like test_pass_lower.run_lir, except that every planned kernel result is
    written into its function invocation's arena (filled with NaN-like garbage first) and read
    back through a view of it: two live tensors sharing bytes would corrupt the result."""

    def __init__(self, program, plan):
        self.program, self.plan = program, plan
        self.arenas_made = 0

    def __call__(self, *args):
        return self.call(self.program.entry_function, (), args)

    def call(self, func, env, args):
        scope = {p.name: v for p, v in zip(func.params, args)}
        if func.env is not None:
            scope.update({p.name: v for p, v in zip(func.env, env)})
        fplan = self.plan.of(func.name)
        arena = None
        if fplan.arena_bytes:
            self.arenas_made += 1
            arena = np.full(fplan.arena_bytes, 0xFF, dtype=np.uint8)  # NaN / -1 everywhere
        return self.block(func, env, func.body, scope, fplan, arena)

    def block(self, func, env, block, scope, fplan, arena):
        scope = dict(scope)
        for stmt in block.stmts:
            scope[stmt.var.name] = self.value(func, env, stmt, scope, fplan, arena)
        return _atom(self.program, block.result, scope)

    def value(self, func, env, stmt, scope, fplan, arena):
        program, v = self.program, stmt.value
        a = lambda x: _atom(program, x, scope)  # noqa: E731
        if isinstance(v, KernelCall):
            result = _kernel(program.kernel(v.kernel), [a(x) for x in v.args])
            buffers = fplan.outputs.get(stmt.var.name)
            if buffers is None:
                return result
            flat = list(result) if isinstance(result, tuple) else [result]
            views = []
            for value, buf in zip(flat, buffers):
                assert buf.offset % ALIGNMENT == 0 and buf.nbytes % ALIGNMENT == 0
                assert buf.nbytes >= tensor_nbytes(buf.type) and buf.offset + buf.nbytes <= len(arena)
                view = arena[buf.offset : buf.offset + tensor_nbytes(buf.type)].view(buf.type.dtype)
                view = view.reshape(buf.type.shape)
                view[...] = value
                views.append(view)
            return tuple(views) if isinstance(result, tuple) else views[0]
        if isinstance(v, If):
            branch = v.then if bool(a(v.cond)) else v.else_
            return self.block(func, env, branch, scope, fplan, arena)
        if isinstance(v, Match):
            value = a(v.scrutinee)
            adt = program.adt(v.scrutinee.type.name)
            for case in v.cases:
                if adt.constructor(case.ctor).relay_name == value.constructor:
                    inner = dict(scope)
                    for binder, item in zip(case.binders, value.fields):
                        if binder is not None:
                            inner[binder.name] = item
                    return self.block(func, env, case.body, inner, fplan, arena)
            return self.block(func, env, v.default, scope, fplan, arena)
        if isinstance(v, Call):
            target = program.function(v.func)
            return self.call(target, env if target.env is not None else (), [a(x) for x in v.args])
        if isinstance(v, MakeClosure):
            planned = self

            class Closure(LirClosure):
                def __call__(self, *args):
                    return planned.call(self.func, self.env, args)

            return Closure(program, program.function(v.func), [a(x) for x in v.captured])
        if isinstance(v, ClosureCall):
            return a(v.closure)(*[a(x) for x in v.args])
        return _value(program, func, env, v, scope)  # values without calls or nested blocks


def check_planned_run(program, plan, *args):
    expected = run_lir(program, *args)
    run = PlannedRun(program, plan)
    got = run(*args)
    assert values_equal(got, expected), (got, expected)
    return run


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


# ---------------------------------------------------------------- straight-line code

CHAIN = """
def @main(%x: Tensor[(4, 16), float32], %w: Tensor[(16, 16), float32]) -> Tensor[(4, 16), float32] {
  %0 = nn.dense(%x, %w, units=16);
  %1 = nn.relu(%0);
  %2 = nn.dense(%1, %w, units=16);
  %3 = tanh(%2);
  %4 = nn.dense(%3, %w, units=16);
  %5 = sigmoid(%4);
  %6 = nn.dense(%5, %w, units=16);
  nn.dense(%6, %w, units=16)
}
"""


def test_a_chain_of_kernels_reuses_two_buffers_and_returns_a_fresh_one():
    program = program_of(CHAIN)
    main = program.entry_function
    plan = plan_memory(program).of("main")
    calls = [s.var.name for s in iter_lets(main.body) if isinstance(s.value, KernelCall)]
    assert len(calls) == 5
    returned = main.body.result.name
    assert returned == calls[-1] and returned not in plan.outputs  # the result escapes
    assert set(plan.outputs) == set(calls[:-1])
    # Each (4, 16) float32 tensor takes 256 bytes; a kernel's input and output are live together,
    # so two buffers alternate: 4 tensors in 512 bytes.
    assert plan.buffer_bytes == 4 * 256 and plan.arena_bytes == 512
    offsets = [plan.outputs[name][0].offset for name in calls[:-1]]
    assert all(a != b for a, b in zip(offsets, offsets[1:]))
    assert plan.views == {name: plan.outputs[name][0] for name in calls[:-1]}
    check_planned_run(program, plan_memory(program), rand(4, 16), rand(16, 16, seed=1) * 0.3)


def test_buffers_of_different_sizes_share_space_without_overlapping_while_live():
    src = """
    def @main(%x: Tensor[(8, 32), float32], %w: Tensor[(64, 32), float32], %v: Tensor[(32, 64), float32])
        -> Tensor[(8, 32), float32] {
      %0 = nn.dense(%x, %w, units=64);
      %1 = nn.relu(%0);
      %2 = nn.dense(%1, %v, units=32);
      %3 = tanh(%2);
      %4 = nn.dense(%3, %w, units=64);
      %5 = sigmoid(%4);
      %6 = nn.dense(%5, %v, units=32);
      %7 = add(%6, %3);
      %8 = nn.dense(%7, %w, units=64);
      nn.dense(%8, %v, units=32)
    }
    """
    program = program_of(src)
    plan = plan_memory(program).of("main")
    assert plan.arena_bytes < plan.buffer_bytes
    for bufs in plan.outputs.values():
        for buf in bufs:
            assert buf.nbytes == max(-(-tensor_nbytes(buf.type) // ALIGNMENT) * ALIGNMENT, ALIGNMENT)
    check_planned_run(
        program, plan_memory(program), rand(8, 32), rand(64, 32, seed=1) * 0.2, rand(32, 64, seed=2) * 0.2
    )


def test_a_value_read_late_keeps_its_buffer_until_then():
    # dense ops are fusion barriers: each is its own kernel, the final add fuses into the last one
    src = """
    def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32]) -> Tensor[(2, 8), float32] {
      %0 = nn.dense(%x, %w, units=8);
      %1 = nn.dense(%0, %w, units=8);
      %2 = nn.dense(%1, %w, units=8);
      %3 = nn.dense(%2, %w, units=8);
      %4 = nn.dense(%3, %w, units=8);
      add(nn.dense(%4, %w, units=8), %0)
    }
    """
    program = program_of(src)
    plan = plan_memory(program).of("main")
    first, *middle, last = calls(program.entry_function)
    assert last not in plan.outputs and set(plan.outputs) == {first, *middle}
    kept = plan.outputs[first][0]
    assert all(plan.outputs[name][0].offset != kept.offset for name in middle)
    assert plan.arena_bytes == 3 * 64  # %0 for the whole body, two more alternating
    check_planned_run(program, plan_memory(program), rand(2, 8), rand(8, 8, seed=1) * 0.5)


def test_tuple_results_are_planned_whole_and_projections_are_views():
    src = """
    def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32], %v: Tensor[(8, 4), float32])
        -> Tensor[(2, 8), float32] {
      %0 = nn.dense(%x, %w, units=8);
      %1 = split(%0, indices_or_sections=2, axis=1);
      %2 = nn.dense(%1.0, %v, units=8);
      %3 = nn.dense(%1.1, %v, units=8);
      %4 = add(%2, %3);
      nn.dense(%4, %w, units=8)
    }
    """
    program = program_of(src)
    main = program.entry_function
    plan = plan_memory(program).of("main")
    (split,) = kernel_lets(main, "fused_split")
    assert [b.type for b in plan.outputs[split]] == [TensorType((2, 4), "float32")] * 2
    assert plan.outputs[split][0].offset != plan.outputs[split][1].offset
    assert split not in plan.views  # a tuple is not a tensor view; its projections are
    projections = [s for s in iter_lets(main.body) if isinstance(s.value, Proj)]
    assert projections
    for stmt in projections:
        assert plan.views[stmt.var.name] == plan.outputs[split][stmt.value.index]
    check_planned_run(program, plan_memory(program), rand(2, 8), rand(8, 8, seed=1), rand(8, 4, seed=2))


def test_a_tuple_result_with_one_escaping_field_is_not_planned_at_all():
    src = """
    def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32], %v: Tensor[(4, 4), float32])
        -> (Tensor[(2, 4), float32], Tensor[(2, 4), float32]) {
      %0 = nn.dense(%x, %w, units=8);
      %1 = split(%0, indices_or_sections=2, axis=1);
      %2 = nn.dense(%1.0, %v, units=4);
      (%2, %1.1)
    }
    """
    program = program_of(src)
    plan = plan_memory(program).of("main")
    (split,) = kernel_lets(program.entry_function, "fused_split")
    assert split not in plan.outputs
    assert set(plan.views) == set(plan.outputs) == set(calls(program.entry_function)[:1])
    check_planned_run(program, plan_memory(program), rand(2, 8), rand(8, 8, seed=1), rand(4, 4, seed=2))


# ---------------------------------------------------------------- escapes


ESCAPES = {
    "in a returned tuple": """
        def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32]) -> (Tensor[(2, 8), float32],) {
          %0 = nn.dense(%x, %w, units=8);
          %1 = nn.dense(%0, %w, units=8);
          (%1,)
        }""",
    "passed to a function": """
        def @keep(%a: Tensor[(2, 8), float32]) -> Tensor[(2, 8), float32] { %a }
        def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32]) -> Tensor[(2, 8), float32] {
          %0 = nn.dense(%x, %w, units=8);
          %1 = nn.dense(%0, %w, units=8);
          %2 = @keep(%1);
          nn.dense(%2, %w, units=8)
        }""",
    "stored in a reference": """
        def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32]) -> Tensor[(2, 8), float32] {
          %0 = nn.dense(%x, %w, units=8);
          %1 = nn.dense(%0, %w, units=8);
          let %r = ref(%1);
          let %u = nn.dense(%0, %w, units=8);
          add(ref_read(%r), %u)
        }""",
    "captured by a closure": """
        def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32]) -> Tensor[(2, 8), float32] {
          %0 = nn.dense(%x, %w, units=8);
          %1 = nn.dense(%0, %w, units=8);
          let %f = fn (%y: Tensor[(2, 8), float32]) -> Tensor[(2, 8), float32] { add(%y, %1) };
          let %u = nn.dense(%0, %w, units=8);
          %f(nn.dense(%u, %w, units=8))
        }""",
    "in a constructor": """
        type Box { B(Tensor[(2, 8), float32]), }
        def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32]) -> Box[] {
          %0 = nn.dense(%x, %w, units=8);
          %1 = nn.dense(%0, %w, units=8);
          B(%1)
        }""",
    "the result of a branch": """
        def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(8, 8), float32], %c: bool) -> Tensor[(2, 8), float32] {
          %0 = nn.dense(%x, %w, units=8);
          %1 = nn.dense(%0, %w, units=8);
          %2 = if (%c) { %1 } else { %x };
          nn.dense(%2, %w, units=8)
        }""",
}


def calls(func) -> list[str]:
    """The variables bound to kernel calls, in program order."""
    return [s.var.name for s in iter_lets(func.body) if isinstance(s.value, KernelCall)]


def escaping_uses(func) -> set[str]:
    """Variables stored, passed to a call, or produced as a block's value (written out per case,
    independently of the pass)."""
    out = set()
    for stmt in iter_lets(func.body):
        value = stmt.value
        if isinstance(value, (MakeTuple, MakeAdt)):
            atoms = value.fields
        elif isinstance(value, MakeClosure):
            atoms = value.captured
        elif isinstance(value, (Call, ClosureCall)):
            atoms = value.args
        elif isinstance(value, (RefNew, RefSet)):
            atoms = (value.value,)
        else:
            atoms = ()
        out.update(a.name for a in atoms if isinstance(a, Var))
        if isinstance(value, If):
            out.update(b.result.name for b in (value.then, value.else_) if isinstance(b.result, Var))
    if isinstance(func.body.result, Var):
        out.add(func.body.result.name)
    return out


@pytest.mark.parametrize("how", sorted(ESCAPES))
def test_a_value_that_escapes_keeps_its_own_allocation(how):
    program = program_of(ESCAPES[how])
    plan = plan_memory(program)
    escaping = planned = 0
    for func in program.functions:
        fplan = plan.of(func.name)
        for name in calls(func):
            if name in escaping_uses(func):
                escaping += 1
                assert name not in fplan.outputs and name not in fplan.views
            else:
                planned += 1
                assert name in fplan.outputs
    assert escaping and planned
    args = [rand(2, 8), rand(8, 8, seed=1)] + ([np.array(True)] if "branch" in how else [])
    if "constructor" not in how:
        check_planned_run(program, plan, *args)


def test_a_renamed_value_that_escapes_takes_the_original_with_it():
    func = FunctionDef(
        "main",
        (Param("x", T28), Param("w", T88)),
        TupleT((T28, T28)),
        Block(
            (
                Let(Var("a", T28), KernelCall("dense", (Var("x", T28), Var("w", T88)))),
                Let(Var("b", T28), AtomValue(Var("a", T28))),
                Let(Var("c", T28), KernelCall("dense", (Var("a", T28), Var("w", T88)))),
                Let(Var("d", T28), KernelCall("dense", (Var("c", T28), Var("w", T88)))),
                Let(Var("r", TupleT((T28, T28))), MakeTuple((Var("d", T28), Var("b", T28)))),
            ),
            Var("r", TupleT((T28, T28))),
        ),
    )
    plan = plan_function(func)
    assert set(plan.outputs) == {"c"}  # a escapes through its alias b; d is returned
    renamed = dataclasses.replace(
        func,
        body=Block(
            func.body.stmts[:4] + (Let(Var("r", TupleT((T28, T28))), MakeTuple((Var("d", T28), Var("x", T28)))),),
            func.body.result,
        ),
    )
    plan = plan_function(renamed)
    assert set(plan.outputs) == {"a", "c"} and plan.views["b"] == plan.outputs["a"][0]
    assert plan.outputs["a"][0].offset != plan.outputs["c"][0].offset


# ---------------------------------------------------------------- control flow, recursion, loops


def test_buffers_in_sibling_branches_and_reads_inside_a_branch():
    src = """
    def @main(%x: Tensor[(4, 4), float32], %w: Tensor[(4, 4), float32], %c: bool) -> Tensor[(4, 4), float32] {
      %0 = nn.dense(%x, %w, units=4);
      %1 = nn.dense(%0, %w, units=4);
      if (%c) {
        %2 = nn.dense(%0, %w, units=4);
        %3 = nn.dense(%2, %w, units=4);
        add(%3, %1)
      } else {
        %4 = nn.dense(%1, %w, units=4);
        %5 = nn.dense(%4, %w, units=4);
        multiply(%5, %0)
      }
    }
    """
    program = program_of(src)
    plan = plan_memory(program)
    assert len(plan.of("main").outputs) >= 4
    for flag in (True, False):
        check_planned_run(program, plan, rand(4, 4), rand(4, 4, seed=1), np.array(flag))


TREE = """
def @depth_sum(%t: Tree[Tensor[(1, 6), float32]]) -> Tensor[(1, 6), float32] {
  match (%t) {
    Rose(%x, %children) => {
      let %parts = @map(@depth_sum, %children);
      let %zero = zeros(shape=[1, 6], dtype="float32");
      let %acc = fn (%a: Tensor[(1, 6), float32], %b: Tensor[(1, 6), float32]) -> Tensor[(1, 6), float32] {
        add(%a, tanh(%b))
      };
      let %s = @foldl(%acc, %zero, %parts);
      let %w = ones(shape=[6, 6], dtype="float32");
      let %h = nn.dense(sigmoid(add(%x, %s)), %w, units=6);
      let %k = nn.dense(%h, %w, units=6);
      multiply(tanh(%k), %x)
    },
  }
}
def @main(%t: Tree[Tensor[(1, 6), float32]]) -> Tensor[(1, 6), float32] { @depth_sum(%t) }
"""


def _tree(depth, seed=0):
    rng = np.random.default_rng(seed)

    def build(level):
        children = ADTValue("Nil")
        if level < depth:
            for _ in range(2):
                children = ADTValue("Cons", (build(level + 1), children))
        return ADTValue("Rose", (rng.standard_normal((1, 6)).astype("float32"), children))

    return build(0)


def test_recursion_gives_every_invocation_its_own_arena():
    program = program_of(TREE, prelude=True)
    plan = plan_memory(program)
    planned = [name for name in plan.functions if plan.of(name).outputs]
    assert any(name.startswith("depth_sum") for name in planned)
    run = check_planned_run(program, plan, _tree(3))
    assert run.arenas_made >= 15  # one per tree node at least


def test_a_foldl_loop_with_kernels_in_the_closure_body():
    src = """
    def @main(%xs: List[Tensor[(1, 8), float32]], %w: Tensor[(8, 8), float32]) -> Tensor[(1, 8), float32] {
      let %step = fn (%h: Tensor[(1, 8), float32], %x: Tensor[(1, 8), float32]) -> Tensor[(1, 8), float32] {
        let %g = split(tanh(add(nn.dense(%h, %w, units=8), %x)), indices_or_sections=2, axis=1);
        let %c = concatenate((sigmoid(%g.0), %g.1), axis=1);
        multiply(%c, tanh(%c))
      };
      @foldl(%step, zeros(shape=[1, 8], dtype="float32"), %xs)
    }
    """
    program = program_of(src, prelude=True)
    plan = plan_memory(program)
    step = next(f for f in program.functions if f.env is not None and plan.of(f.name).outputs)
    assert plan.of(step.name).arena_bytes > 0
    xs = ADTValue("Nil")
    for i in range(4):
        xs = ADTValue("Cons", (rand(1, 8, seed=i), xs))
    check_planned_run(program, plan, xs, rand(8, 8, seed=9) * 0.5)


# ---------------------------------------------------------------- options


def test_plannable_narrows_what_is_planned_and_alignment_is_honoured():
    program = program_of(CHAIN)
    none = plan_memory(program, plannable=lambda ty: False)
    assert none.functions == {} and none.of("main").arena_bytes == 0
    wide = plan_memory(program, alignment=1024).of("main")
    assert all(b.offset % 1024 == 0 and b.nbytes == 1024 for bufs in wide.outputs.values() for b in bufs)
    assert wide.arena_bytes == 2048


def test_scalars_can_be_left_to_registers():
    src = """
    def @main(%x: Tensor[(4, 4), float32], %w: Tensor[(4, 4), float32]) -> Tensor[(4, 4), float32] {
      %0 = nn.dense(%x, %w, units=4);
      %1 = sum(%0);
      %2 = nn.dense(%0, %w, units=4);
      multiply(%2, %1)
    }
    """
    program = program_of(src)
    everything = plan_memory(program).of("main")
    no_scalars = plan_function(program.entry_function, plannable=lambda ty: ty.shape != ())
    assert any(b.type.shape == () for bufs in everything.outputs.values() for b in bufs)
    assert all(b.type.shape != () for bufs in no_scalars.outputs.values() for b in bufs)
    assert no_scalars.outputs
    check_planned_run(program, plan_memory(program), rand(4, 4), rand(4, 4, seed=1))
