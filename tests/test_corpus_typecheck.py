"""Every corpus module whose operators are all in the registry type-checks, whole models included."""

from __future__ import annotations

import pytest

from transpile import relay
from transpile.relay.op.registry import lookup
from transpile.relay.visitor import ExprVisitor

from corpus_support import load, records

WHOLE_MODELS = {
    "menangerie__1.relay": "MNIST",
    "menangerie__2.relay": "GPT-2",
    "menangerie__3.relay": "GPT-2 fp16",
    "menangerie__7.relay": "ResNet-50 v2",
    "menangerie__8.relay": "ResNet-50 v2 fp16",
    "menangerie__9.relay": "MobileNet v2",
    "menangerie__10.relay": "MobileNet v2 fp16",
    "menangerie__12.relay": "ResNeXt-50",
    "menangerie__13.relay": "ResNeXt-50 fp16",
    "rfc0048__1.relay": "fashion-MNIST",
}


class _OpNames(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def visit_op(self, op):
        self.names.add(op.name)


def operators_of(mod) -> set[str]:
    from transpile.relay.deep import run_deep

    collector = _OpNames()
    for _, func in mod.functions.items():
        run_deep(collector.visit, func)  # a recursive visitor: deep corpus programs need the big stack
    return collector.names


def _parse_or_skip(record):
    try:
        return load(record)
    except LookupError as why:
        pytest.skip(str(why))


@pytest.mark.parametrize("record", records("module", "ok"), ids=lambda r: r["file"])
def test_module_type_checks_when_all_operators_are_registered(record):
    mod = _parse_or_skip(record)
    unknown = sorted(name for name in operators_of(mod) if lookup(name) is None)
    if unknown:
        assert record["file"] not in WHOLE_MODELS, f"whole model uses unregistered operators {unknown}"
        pytest.skip(f"uses operators outside the registry: {', '.join(unknown)}")
    typed = relay.transform.InferType()(mod)
    for gv, func in typed.functions.items():
        assert isinstance(func.checked_type, relay.FuncType), gv.name_hint
        assert isinstance(func.body.checked_type, relay.Type)


@pytest.mark.parametrize("name", sorted(WHOLE_MODELS), ids=lambda n: WHOLE_MODELS[n])
def test_whole_models_have_expected_output_types(name):
    record = next(r for r in records("module", "ok") if r["file"] == name)
    mod = relay.transform.InferType()(load(record))
    main = mod["main"]
    declared = main.ret_type
    if declared is not None:
        assert relay.structural_equal(main.body.checked_type, declared)
    assert isinstance(main.checked_type.ret_type, (relay.TensorType, relay.TupleType))
