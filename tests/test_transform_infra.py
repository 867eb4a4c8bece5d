"""Pass infrastructure (tvm.transform semantics): PassContext, Sequential's opt_level / disabled / required
handling, function and module passes, and the names relay.transform keeps importable."""

from __future__ import annotations

import threading

import pytest

from transpile import relay
from transpile.relay import transform
from transpile.relay.transform import (
    FunctionPass,
    InferType,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    Sequential,
    function_pass,
    module_pass,
)


def _module():
    x = relay.var("x", shape=(2,))
    return relay.IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(1.0))))


def _recorder(log, name, opt_level, required=None):
    @module_pass(opt_level=opt_level, name=name, required=required)
    def record(mod, ctx):
        log.append((name, ctx.opt_level))
        return mod

    return record


def test_old_names_stay_importable():
    from transpile.relay.transform import InferType, Pass, Sequential, module_pass  # noqa: F401

    assert relay.transform is transform
    assert isinstance(InferType(), Pass) and InferType().name == "InferType"


def test_pass_context_defaults_and_nesting():
    assert PassContext.current().opt_level == 2  # TVM's default context
    with PassContext(opt_level=3, disabled_pass=["FoldConstant"]) as outer:
        assert PassContext.current() is outer
        with PassContext(opt_level=1) as inner:
            assert PassContext.current() is inner
        assert PassContext.current() is outer
    assert PassContext.current().opt_level == 2


def test_pass_context_is_per_thread():
    seen = []
    with PassContext(opt_level=0):
        worker = threading.Thread(target=lambda: seen.append(PassContext.current().opt_level))
        worker.start()
        worker.join()
    assert seen == [2]


def test_pass_context_rejects_bad_arguments():
    with pytest.raises(ValueError):
        PassContext(opt_level=-1)
    with pytest.raises(TypeError):
        PassContext(disabled_pass="FoldConstant")


def test_sequential_skips_passes_above_the_opt_level():
    log = []
    seq = Sequential([_recorder(log, "zero", 0), _recorder(log, "two", 2), _recorder(log, "three", 3)])
    seq(_module())  # default context: opt_level 2
    assert [name for name, _ in log] == ["zero", "two"]
    log.clear()
    with PassContext(opt_level=3):
        seq(_module())
    assert [name for name, _ in log] == ["zero", "two", "three"]


def test_disabled_beats_required_beats_opt_level():
    log = []
    seq = Sequential([_recorder(log, "a", 0), _recorder(log, "b", 4)])
    with PassContext(opt_level=1, required_pass=["b"], disabled_pass=["a"]):
        seq(_module())
    assert [name for name, _ in log] == ["b"]
    log.clear()
    with PassContext(opt_level=4, required_pass=["a"], disabled_pass=["a"]):
        seq(_module())
    assert [name for name, _ in log] == ["b"]  # TVM: a disabled pass never runs


def test_calling_a_pass_directly_ignores_the_context():
    log = []
    with PassContext(opt_level=0):
        _recorder(log, "high", 3)(_module())
    assert log == [("high", 0)]


def test_required_passes_run_first_by_name():
    log = []
    needs_types = _recorder(log, "needs", 0, required=["InferType"])
    seen = []

    @module_pass(opt_level=0, required=["InferType"])
    def check(mod):
        seen.append(getattr(mod["main"], "checked_type_", None))
        return mod

    Sequential([needs_types, check])(_module())
    assert seen[0] is not None
    with pytest.raises(ValueError, match="NoSuchPass"):
        Sequential([_recorder(log, "x", 0, required=["NoSuchPass"])])(_module())


def test_function_pass_decorator_forms():
    calls = []

    @function_pass(opt_level=1)
    def negate_body(func, mod, ctx):
        calls.append(ctx.opt_level)
        return relay.Function(func.params, relay.negative(func.body), func.ret_type)

    assert isinstance(negate_body, FunctionPass)
    assert negate_body.info.opt_level == 1 and negate_body.name == "negate_body"
    out = negate_body(_module())
    assert out["main"].body.op.name == "negative"
    assert out["main"].checked_type is not None  # re-typed after the pass

    @function_pass(opt_level=2, name="Identity")
    class Identity:
        def __init__(self, note):
            self.note = note

        def transform_function(self, func, mod, ctx):
            calls.append(self.note)
            return func

    identity = Identity("seen")
    assert isinstance(identity, FunctionPass) and identity.name == "Identity" and identity.opt_level == 2
    mod = _module()
    assert identity(mod)["main"] is mod["main"]
    assert calls[-1] == "seen"


def test_function_pass_leaves_fused_and_external_functions_alone():
    x = relay.var("x", shape=(2,))
    mod = _module()
    mod["kernel"] = relay.Function([x], relay.nn.relu(x), attrs={"Primitive": 1})
    mod["external"] = relay.Function([x], relay.nn.relu(x), attrs={"Compiler": "dnnl"})
    touched = []

    @function_pass(opt_level=0)
    def spy(func, mod, ctx):
        touched.append(func)
        return func

    spy(mod)
    assert touched == [mod["main"]]


def test_function_pass_types_an_untyped_module_first():
    @function_pass(opt_level=0)
    def needs_types(func, mod, ctx):
        assert func.body.checked_type == relay.TensorType((2,), "float32")
        return func

    needs_types(_module())


def test_module_pass_class_form_and_pass_info():
    @module_pass(opt_level=2, name="Renamer")
    class Renamer:
        def transform_module(self, mod, ctx):
            return mod

    renamer = Renamer()
    assert isinstance(renamer, ModulePass) and renamer.info.name == "Renamer"
    assert repr(PassInfo(3, "X", ["InferType"])) == "PassInfo(opt_level=3, name='X', required=['InferType'])"
    assert InferType().opt_level == 0


def test_sequential_runs_in_order_and_nests():
    log = []
    inner = Sequential([_recorder(log, "inner", 0)], name="Inner")
    outer = Sequential([_recorder(log, "first", 0), inner, _recorder(log, "last", 0)])
    outer(_module())
    assert [name for name, _ in log] == ["first", "inner", "last"]
    assert outer.name == "sequential" and inner.name == "Inner"
    with pytest.raises(TypeError):
        Sequential([lambda mod: mod])


def test_passes_reject_non_modules():
    with pytest.raises(TypeError, match="IRModule"):
        InferType()(relay.var("x"))


def test_every_graph_pass_has_tvms_name_and_level():
    levels = {
        "SimplifyInference": 0,
        "FoldConstant": 2,
        "BackwardFoldScaleAxis": 3,
        "ForwardFoldScaleAxis": 3,
        "CanonicalizeOps": 3,
        "SimplifyExpr": 0,
        "EliminateCommonSubexpr": 3,
        "DeadCodeElimination": 1,
        "RemoveUnusedFunctions": 1,
    }
    for name, level in levels.items():
        made = getattr(transform, name)()
        assert isinstance(made, Pass) and made.name == name and made.opt_level == level, name
    assert transform.FoldScaleAxis().name == "FoldScaleAxis"
    assert [p.name for p in transform.FoldScaleAxis().passes] == [
        "BackwardFoldScaleAxis",
        "ForwardFoldScaleAxis",
        "FoldConstant",
    ]


def test_function_passes_see_the_callers_context():
    seen = []

    @function_pass(opt_level=0)
    def spy(func, mod, ctx):
        seen.append((ctx.opt_level, PassContext.current().opt_level, ctx.disabled_pass))
        return func

    with PassContext(opt_level=3, disabled_pass=["X"]):
        spy(_module())
        Sequential([spy])(_module())
    assert seen == [(3, 3, ("X",)), (3, 3, ("X",))]
