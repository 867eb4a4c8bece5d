"""Backend plugin API: entry-point discovery, registration, feature analysis, feature checks, compile/emit/build/load."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

import transpile.relay as relay
from transpile.backends import (
    ALL_FEATURES,
    CLOSURES,
    FEATURE_ORDER,
    Artifact,
    Backend,
    registry,
)
from transpile.backends.api import build, compile, emit, load, load_artifact
from transpile.backends.features import check_supported, required_features
from transpile.backends.interpreter import InterpreterBackend
from transpile.errors import TranspileError, UnsupportedFeatureError
from transpile.runtime import ADTValue

HEADER = '#[version = "0.0.5"]\n'


@pytest.fixture(autouse=True)
def fresh_registry():
    """Each test sees freshly discovered entry points and leaves no registered backends behind."""
    registered = dict(registry._registered)
    registry.refresh()
    yield
    registry._registered.clear()
    registry._registered.update(registered)
    registry.refresh()


@pytest.fixture
def interpreter():
    """The interpreter backend under its own name, whether or not transpile is installed."""
    if "interpreter" not in registry.backends():
        registry.register_backend("interpreter", InterpreterBackend)
    return "interpreter"


def make_dist(tmp_path, monkeypatch, dist: str, version: str, entry_points: dict, modules: dict | None = None):
    """Install a fake distribution (dist-info metadata + modules) on sys.path: the real discovery mechanism."""
    info = tmp_path / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = ["[transpile.backends]"] + [f"{name} = {target}" for name, target in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for module, source in (modules or {}).items():
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.refresh()


FAKE_MODULE = """
    from transpile.backends import Backend, REFS

    class FakeBackend(Backend):
        name = "fake"
        capabilities = frozenset({REFS})

    class Misnamed(Backend):
        name = "something-else"

    NOT_A_CLASS = 42
"""


# ----- discovery -----------------------------------------------------------------------------


def test_entry_point_is_discovered_and_loaded_lazily(tmp_path, monkeypatch):
    make_dist(
        tmp_path, monkeypatch, "fakeplug", "1.2", {"fake": "fakeplug_mod:FakeBackend"}, {"fakeplug_mod": FAKE_MODULE}
    )
    assert "fake" in registry.backends()
    assert "fakeplug_mod" not in sys.modules, "listing names must not import plugins"
    backend = registry.get_backend("fake")
    assert type(backend).__name__ == "FakeBackend" and backend.name == "fake"
    assert "fakeplug_mod" in sys.modules
    (info,) = [i for i in registry.backend_infos() if i.name == "fake"]
    assert (info.package, info.version, info.target) == ("fakeplug", "1.2", "fakeplug_mod:FakeBackend")
    assert info.capabilities == frozenset({"refs"}) and info.error is None and info.consumes == "lir"


def test_failing_plugin_is_recorded_and_raises_only_when_selected(tmp_path, monkeypatch):
    broken = "raise ImportError('the libfoo runtime is not installed')\n"
    make_dist(
        tmp_path,
        monkeypatch,
        "brokenplug",
        "0.3",
        {"broken": "brokenplug_mod:Backend", "fake": "fakeplug_mod2:FakeBackend"},
        {"brokenplug_mod": broken, "fakeplug_mod2": FAKE_MODULE},
    )
    assert {"broken", "fake"} <= set(registry.backends())
    infos = {i.name: i for i in registry.backend_infos()}
    assert infos["broken"].package == "brokenplug" and infos["broken"].version == "0.3"
    assert "ImportError" in infos["broken"].error and "libfoo" in infos["broken"].error
    assert infos["broken"].capabilities is None
    assert infos["fake"].error is None
    assert registry.get_backend("fake").name == "fake"  # the broken plugin does not affect others
    table = registry.format_backend_table()
    assert "broken  (brokenplug 0.3; brokenplug_mod:Backend)" in table
    assert "  error: import of brokenplug_mod:Backend failed: ImportError: the libfoo runtime is not installed" in table
    assert "fake  (brokenplug 0.3; fakeplug_mod2:FakeBackend)\n  consumes: lir\n  capabilities: refs\n" in table
    with pytest.raises(TranspileError) as info:
        registry.get_backend("broken")
    message = str(info.value)
    assert "backend 'broken'" in message and "brokenplug 0.3" in message and "libfoo" in message


def test_two_backends_with_one_name_are_an_error_naming_both(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    make_dist(first, monkeypatch, "plug_one", "1.0", {"dup": "dup_one:FakeBackend"})
    make_dist(second, monkeypatch, "plug_two", "2.0", {"dup": "dup_two:FakeBackend"})
    assert registry.backends().count("dup") == 1
    with pytest.raises(TranspileError) as info:
        registry.get_backend("dup")
    message = str(info.value)
    assert "two different backends are named 'dup'" in message
    assert "dup_one:FakeBackend from package plug_one 1.0" in message
    assert "dup_two:FakeBackend from package plug_two 2.0" in message
    dup_infos = [i for i in registry.backend_infos() if i.name == "dup"]
    assert len(dup_infos) == 2 and all("two different backends" in i.error for i in dup_infos)


@pytest.mark.parametrize(
    "target, problem",
    [
        ("fakeplug_mod3:NOT_A_CLASS", "is not a subclass of transpile.backends.Backend"),
        ("fakeplug_mod3:Misnamed", "is registered as 'odd' but its `name` attribute is 'something-else'"),
        ("fakeplug_mod3:Missing", "AttributeError"),
    ],
)
def test_invalid_entry_points_are_reported_on_selection(tmp_path, monkeypatch, target, problem):
    make_dist(tmp_path, monkeypatch, "oddplug", "1.0", {"odd": target}, {"fakeplug_mod3": FAKE_MODULE})
    with pytest.raises(TranspileError, match="backend 'odd'") as info:
        registry.get_backend("odd")
    assert problem in str(info.value)


def test_unknown_backend_lists_the_available_ones():
    class Toy(Backend):
        name = "toy"

    registry.register_backend("toy", Toy)
    with pytest.raises(TranspileError) as info:
        registry.get_backend("no-such-backend")
    assert "unknown backend 'no-such-backend'" in str(info.value)
    assert "toy" in str(info.value)


def test_register_and_unregister_backend():
    class Toy(Backend):
        name = "toy"
        capabilities = frozenset({CLOSURES})

    class Toy2(Toy):
        pass

    registry.register_backend("toy", Toy)
    assert "toy" in registry.backends()
    assert isinstance(registry.get_backend("toy"), Toy)
    with pytest.raises(TranspileError, match="two different backends are named 'toy'"):
        registry.register_backend("toy", Toy2)
    registry.register_backend("toy", Toy2, replace=True)
    assert type(registry.get_backend("toy")) is Toy2
    (info,) = [i for i in registry.backend_infos() if i.name == "toy"]
    assert info.package is None and info.capabilities == frozenset({CLOSURES}) and info.target.endswith("Toy2")
    registry.unregister_backend("toy")
    assert "toy" not in registry.backends()
    with pytest.raises(TranspileError, match="no backend named 'toy' was registered"):
        registry.unregister_backend("toy")


def test_register_backend_validates_the_class():
    class Nameless(Backend):
        name = "other"

    with pytest.raises(TranspileError, match="its `name` attribute is 'other'"):
        registry.register_backend("toy", Nameless)
    with pytest.raises(TranspileError, match="not a subclass"):
        registry.register_backend("toy", object)

    class FutureApi(Backend):
        name = "toy"
        api_version = 2

    with pytest.raises(TranspileError, match="backend API version 2"):
        registry.register_backend("toy", FutureApi)


def test_register_backend_conflicting_with_an_entry_point(tmp_path, monkeypatch):
    make_dist(
        tmp_path, monkeypatch, "fakeplug", "1.2", {"fake": "fakeplug_mod4:FakeBackend"}, {"fakeplug_mod4": FAKE_MODULE}
    )

    class Fake(Backend):
        name = "fake"

    with pytest.raises(TranspileError) as info:
        registry.register_backend("fake", Fake)
    assert "fakeplug_mod4:FakeBackend from package fakeplug 1.2" in str(info.value)
    registry.register_backend("fake", Fake, replace=True)
    assert type(registry.get_backend("fake")) is Fake


def test_backends_package_is_callable():
    import transpile.backends as backends_package

    class Toy(Backend):
        name = "toy"

    registry.register_backend("toy", Toy)
    assert backends_package() == registry.backends()
    assert "toy" in backends_package()


def test_interpreter_backend_is_installed_through_setup_cfg():
    """The built-in backends register through the project's own entry points (needs `pip install -e .`)."""
    assert "interpreter" in registry.backends(), "add the transpile.backends entry points to setup.cfg and reinstall"
    (info,) = [i for i in registry.backend_infos() if i.name == "interpreter"]
    assert info.package == "transpile" and info.error is None
    assert info.target == "transpile.backends.interpreter:InterpreterBackend"
    assert info.capabilities == ALL_FEATURES and info.consumes == "relay"


# ----- feature analysis --------------------------------------------------------------------


def typed(source: str, prelude: bool = False):
    init = None
    if prelude:
        init = relay.IRModule()
        relay.Prelude(init)
    mod = relay.parse(HEADER + textwrap.dedent(source), source_name="features.relay", init_module=init)
    return relay.transform.InferType()(mod)


def where(features: dict) -> dict:
    """feature -> (line, column); line 1 is the version header."""
    return {f: (span.line, span.column) if span else None for f, span in features.items()}


def test_plain_tensor_program_needs_nothing():
    mod = typed("""
        def @double(%x: Tensor[(2), float32]) -> Tensor[(2), float32] { %x + %x }
        def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] { @double(nn.relu(%x)) }
        """)
    assert required_features(mod) == {}


def test_each_feature_is_found_at_its_first_use():
    mod = typed(
        """
        def @inc(%x: int32) -> int32 {
          %x + 1
        }

        def @count[A](%xs: List[A]) -> int32 {
          match (%xs) {
            Cons(_, %rest) => 1 + @count(%rest),
            Nil => 0,
          }
        }

        def @main(%x: int32, %d: Tensor[(?, 2), float32]) -> int32 {
          let %f = fn (%y: int32) -> int32 { @inc(%y) };
          let %r = ref(%x);
          @count(Cons(%f(%x), Nil)) + ref_read(%r)
        }
        """,
        prelude=True,
    )
    found = required_features(mod)
    assert list(found) == list(FEATURE_ORDER)  # every feature, in the documented order
    assert where(found) == {
        "closures": (15, 12),
        "adts": (17, 10),
        "refs": (16, 12),
        "polymorphism": (17, 3),
        "recursion": (9, 27),
        "non_tail_recursion": (9, 27),
        "dynamic_shapes": (14, 22),
    }
    assert found["closures"].source_name == "features.relay"


def test_tail_recursion_is_not_non_tail_recursion():
    mod = typed("""
        def @loop(%n: int32, %acc: int32) -> int32 {
          if (%n == 0) { %acc } else { @loop(%n - 1, %acc + %n) }
        }
        def @main(%n: int32) -> int32 { @loop(%n, 0) }
        """)
    assert where(required_features(mod)) == {"recursion": (4, 32)}


def test_mutual_tail_recursion_is_recursion():
    mod = typed("""
        def @even(%n: int32) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
        def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
        def @main(%n: int32) -> bool { @even(%n) }
        """)
    assert set(required_features(mod)) == {"recursion"}


def test_local_recursion_tail_and_non_tail():
    tail = typed("""
        def @main(%n: int32) -> int32 {
          let %loop = fn (%i: int32) -> int32 { if (%i == 0) { %i } else { %loop(%i - 1) } };
          %loop(%n)
        }
        """)
    assert where(required_features(tail)) == {"closures": (4, 15), "recursion": (4, 68)}
    non_tail = typed("""
        def @main(%n: int32) -> int32 {
          let %sum = fn (%i: int32) -> int32 { if (%i == 0) { 0 } else { %i + %sum(%i - 1) } };
          %sum(%n)
        }
        """)
    assert set(required_features(non_tail)) == {"closures", "recursion", "non_tail_recursion"}


def test_recursive_call_inside_a_nested_function_is_not_a_tail_call():
    mod = typed("""
        def @f(%n: int32) -> int32 {
          if (%n == 0) { 0 } else { let %g = fn () -> int32 { @f(%n - 1) }; %g() }
        }
        def @main(%n: int32) -> int32 { @f(%n) }
        """)
    assert set(required_features(mod)) == {"closures", "recursion", "non_tail_recursion"}


def test_globals_and_constructors_used_as_values_are_closures():
    global_value = typed("""
        def @inc(%x: int32) -> int32 { %x + 1 }
        def @main() -> fn (int32) -> int32 { @inc }
        """)
    assert where(required_features(global_value)) == {"closures": (4, 38)}
    function_param = typed("def @main(%f: fn (int32) -> int32) -> int32 { %f(1) }")
    assert set(required_features(function_param)) == {"closures"}


def test_only_reachable_code_counts():
    mod = typed(
        """
        def @unused(%n: int32) -> int32 { if (%n == 0) { 0 } else { 1 + @unused(%n - 1) } }
        def @main(%x: int32) -> int32 { %x }
        """,
        prelude=True,
    )
    assert required_features(mod) == {}
    assert set(required_features(mod, "unused")) == {"recursion", "non_tail_recursion"}


def test_shared_subexpressions_are_analysed_once():
    # Graph bindings reuse each value twice: a walk without memoization would take 2**200 steps.
    lines = [
        "def @main(%a: Tensor[(2), float32], %b: Tensor[(2), float32]) {",
        "  %0 = add(%a, %b);",
        "  %1 = add(%a, %b);",
    ]
    lines += [f"  %{i} = add(%{i - 1}, %{i - 2});" for i in range(2, 200)]
    lines += ["  %199", "}"]
    mod = typed("\n".join(lines))
    assert required_features(mod) == {}


def test_primitive_functions_are_kernels_not_closures():
    mod = typed("""
        def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
          %0 = fn (%p0: Tensor[(2), float32], Primitive=1) -> Tensor[(2), float32] { nn.relu(%p0) };
          %0(%x)
        }
        """)
    assert required_features(mod) == {}


def test_adt_typed_parameters_need_adts():
    mod = typed("def @main(%xs: List[int32]) -> List[int32] { %xs }", prelude=True)
    assert set(required_features(mod)) == {"adts"}


def test_untyped_module_is_checked_and_unknown_entry_rejected():
    mod = relay.parse(HEADER + "def @main(%x: int32) -> int32 { let %r = ref(%x); ref_read(%r) }")
    assert set(required_features(mod)) == {"refs"}
    with pytest.raises(TranspileError, match="no function @nope"):
        required_features(mod, "nope")


class NoClosures(InterpreterBackend):
    name = "no-closures"
    capabilities = ALL_FEATURES - {CLOSURES}


class Exploding(Backend):
    """A backend that must never run: the framework rejects the program first."""

    name = "exploding"
    capabilities = frozenset()
    consumes = "relay"

    def build(self, program, **options):
        raise AssertionError("the backend ran although the program needs a feature it lacks")

    emit = build


def test_check_supported_raises_with_feature_backend_and_span():
    mod = typed("""
        def @main(%x: int32) -> int32 {
          let %f = fn (%y: int32) -> int32 { %y * 2 };
          %f(%x)
        }
        """)
    check_supported(InterpreterBackend(), mod)  # supports everything
    with pytest.raises(UnsupportedFeatureError) as info:
        check_supported(NoClosures(), mod)
    error = info.value
    assert (error.feature, error.backend) == ("closures", "no-closures")
    assert (error.span.line, error.span.column) == (4, 12)
    assert "backend 'no-closures' does not support closures" in str(error)
    assert "features.relay:4:12" in str(error) and "^" in str(error)


def test_compile_checks_features_before_the_backend_runs():
    registry.register_backend("exploding", Exploding)
    mod = typed("""
        def @main(%x: int32) -> int32 {
          let %r = ref(%x);
          let %f = fn () -> int32 { ref_read(%r) };
          %f()
        }
        """)
    for entry_point in (compile, build, emit):
        with pytest.raises(UnsupportedFeatureError) as info:
            entry_point(mod, backend="exploding")
        assert info.value.feature == "closures"  # the first missing feature in FEATURE_ORDER
        assert info.value.missing == ("closures", "refs")
        assert "it also lacks: refs" in str(info.value)


# ----- compile / emit / build / load ---------------------------------------------------------

ADD_ONE = """
def @add_one(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  %x + 1f
}

def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  @add_one(%x) * 2f
}
"""


def test_compile_module_function_and_global_var(interpreter):
    mod = relay.parse(HEADER + ADD_ONE)
    x = np.array([1.0, 2.0, 3.0], dtype="float32")
    np.testing.assert_array_equal(compile(mod, backend=interpreter)(x), (x + 1) * 2)
    np.testing.assert_array_equal(compile(mod, backend=interpreter, entry="add_one")(x), x + 1)
    np.testing.assert_array_equal(compile(mod.get_global_var("add_one"), mod, backend=interpreter)(x), x + 1)
    # A relay.Function becomes @main of a copy of the module it may call into.
    y = relay.var("y", shape=(3,))
    func = relay.Function([y], relay.Call(mod.get_global_var("add_one"), [y]) - relay.const(1.0))
    np.testing.assert_array_equal(compile(func, mod, backend=interpreter)(x), x)
    assert mod["main"] is not func
    np.testing.assert_array_equal(compile(relay.Function([y], y * y), backend=interpreter)(x), x * x)


def test_compile_rejects_bad_targets(interpreter):
    mod = relay.parse(HEADER + ADD_ONE)
    with pytest.raises(TranspileError, match="no function @missing"):
        compile(mod, backend=interpreter, entry="missing")
    with pytest.raises(TranspileError, match="needs the module"):
        compile(relay.GlobalVar("add_one"), backend=interpreter)
    with pytest.raises(TypeError, match="expected a relay.IRModule"):
        compile("def @main() { 1 }", backend=interpreter)
    with pytest.raises(TranspileError, match="takes no options, got: opt_level"):
        compile(mod, backend=interpreter, opt_level=3)


def test_interpreter_results_follow_the_value_conventions(interpreter):
    mod = typed(
        """
        def @main(%n: int32) -> (List[int32], int32) {
          (Cons(%n, Nil), %n * 2)
        }
        """,
        prelude=True,
    )
    result = compile(mod, backend=interpreter)(5)
    assert result == (ADTValue("Cons", (np.asarray(5, "int32"), ADTValue("Nil"))), np.asarray(10, "int32"))


def test_emit_gives_the_relay_text(interpreter):
    mod = relay.parse(HEADER + ADD_ONE)
    text = emit(mod, backend=interpreter)
    assert text.startswith('#[version = "0.0.5"]') and "def @add_one" in text
    assert relay.structural_equal(relay.parse(text), mod)


def test_export_and_load_round_trip(tmp_path, interpreter):
    mod = relay.parse(HEADER + ADD_ONE)
    artifact = build(mod, backend=interpreter, entry="add_one")
    assert isinstance(artifact, Artifact) and (artifact.backend, artifact.entry) == ("interpreter", "add_one")
    directory = artifact.export(tmp_path / "out")
    manifest = json.loads((directory / "transpile-artifact.json").read_text())
    assert manifest["backend"] == "interpreter" and manifest["entry"] == "add_one"
    assert manifest["format"] == "transpile-artifact" and manifest["data"] == {"source": "program.relay"}
    x = np.array([0.5, 1.5, -1.0], dtype="float32")
    np.testing.assert_array_equal(load(directory)(x), x + 1)
    np.testing.assert_array_equal(load(directory / "transpile-artifact.json")(x), x + 1)
    assert load_artifact(directory).entry == "add_one"


def test_load_rejects_what_is_not_an_artifact(tmp_path, interpreter):
    with pytest.raises(TranspileError, match="not an exported transpile artifact"):
        load(tmp_path)
    (tmp_path / "transpile-artifact.json").write_text(
        json.dumps({"format": "transpile-artifact", "format_version": 1, "backend": "no-such", "entry": "main"})
    )
    with pytest.raises(TranspileError, match="built by backend 'no-such'"):
        load(tmp_path)
    (tmp_path / "transpile-artifact.json").write_text("{not json")
    with pytest.raises(TranspileError, match="cannot read the artifact manifest"):
        load(tmp_path)


def test_backend_returning_something_else_than_an_artifact():
    class Sloppy(InterpreterBackend):
        name = "sloppy"

        def build(self, program, entry="main", **options):
            return lambda *args: None

    registry.register_backend("sloppy", Sloppy)
    with pytest.raises(TranspileError, match="returned function from build, not a transpile.backends.Artifact"):
        build(relay.parse(HEADER + ADD_ONE), backend="sloppy")


def test_lir_backend_needs_the_pipeline(monkeypatch):
    monkeypatch.setitem(sys.modules, "transpile.pipeline", None)  # as if the pipeline were not installed

    class LirOnly(Backend):
        name = "lir-only"
        capabilities = ALL_FEATURES

    registry.register_backend("lir-only", LirOnly)
    with pytest.raises(TranspileError, match="the LIR pipeline is not available yet"):
        compile(relay.parse(HEADER + ADD_ONE), backend="lir-only")


class _Recorded(Artifact):
    def __init__(self, program, options):
        super().__init__("lir-recorder", program.entry)
        self.program, self.options = program, options

    def load(self):
        return lambda: (self.program, self.options)


class LirRecorder(Backend):
    """Hands back what the framework gave it: the pipeline's LIR program and the remaining options."""

    name = "lir-recorder"
    capabilities = ALL_FEATURES
    pipeline_options = {"fuse": False}

    def emit(self, program, **options):
        return f"{type(program).__name__} {program.entry}"

    def build(self, program, **options):
        return _Recorded(program, options)


def test_lir_backend_receives_the_pipelines_program():
    pipeline = pytest.importorskip("transpile.pipeline")
    registry.register_backend("lir-recorder", LirRecorder)
    mod = relay.parse(HEADER + ADD_ONE)
    assert emit(mod, backend="lir-recorder", entry="add_one") == "Program add_one"
    program, options = compile(mod, backend="lir-recorder", fuse=True, level=2)()
    assert type(program).__name__ == "Program" and program.entry == "main"
    assert options == {"level": 2}, "pipeline knobs (fuse) go to the pipeline, the rest to the backend"
    calls = []
    original = pipeline.lower_to_lir

    def spy(mod, entry="main", **kwargs):
        calls.append(kwargs)
        return original(mod, entry, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "lower_to_lir", spy)
        compile(mod, backend="lir-recorder")
        compile(mod, backend="lir-recorder", fuse=True)
    assert calls == [{"options": {"fuse": False}}, {"options": {"fuse": True}}]


def test_backend_may_be_given_as_an_instance_or_class():
    mod = relay.parse(HEADER + ADD_ONE)
    x = np.zeros(3, dtype="float32")
    np.testing.assert_array_equal(compile(mod, backend=InterpreterBackend())(x), np.full(3, 2, "float32"))
    np.testing.assert_array_equal(compile(mod, backend=InterpreterBackend)(x), np.full(3, 2, "float32"))
    with pytest.raises(TypeError, match="backend must be a backend name"):
        compile(mod, backend=3)
