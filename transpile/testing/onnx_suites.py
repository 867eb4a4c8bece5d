"""The ONNX wheel's backend test data run through transpile: per-case outcomes, a summary table, failures by reason.

    python -m transpile.testing.onnx_suites [--backend cpp] [--kind node] [--filter REGEX]

Kinds: `light` (9 CNNs in onnx/backend/test/data/light, run on onnx's deterministic dummy input
against the stored outputs, as `onnx.backend.test.BackendTest` does), `simple`,
`pytorch-converted`, `pytorch-operator` (model directories with test_data_set_*), and `node`
(one-operator models, ~1900 of them). Each case runs through `TranspileBackend` and is judged by
onnx's own `Runner.assert_similar_outputs` (shape, dtype, then rtol/atol from the case).

Outcomes: `passed`; `unsupported` (the importer raised UnsupportedOperatorsError: an operator or
configuration with no conversion); `expected` (the case is listed in `KNOWN_FAILURES`, or uses a
type Relay has no tensors of or a non-tensor graph input, see `limitation`, and failed as explained
there); `xpassed` (expected to fail but passed: remove it from the list); `failed` (anything else).
tests/test_onnx_backend_suites.py is a thin pytest adapter over `run_case`.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = [
    "KINDS",
    "KNOWN_FAILURES",
    "SuiteCase",
    "CaseResult",
    "suite_cases",
    "run_case",
    "run_suites",
    "limitation",
    "summary_table",
    "failure_report",
    "main",
]

KINDS = ("light", "simple", "pytorch-converted", "pytorch-operator", "node")
STATUSES = ("passed", "failed", "unsupported", "expected", "xpassed")

# Cases that fail for a reason that is understood and accepted, by case name (every backend) or
# "backend:name" (one backend), grouped by the reason. A listed case that passes is reported
# `xpassed`, so this list only shrinks. Cases using types Relay cannot represent or feeding
# non-tensor graph inputs are recognized by `limitation` instead, and cases the importer refuses
# (UnsupportedOperatorsError) explain themselves.
_KNOWN_FAILURES_BY_REASON: dict[str, list[str]] = {
    "MaxUnpool reads MaxPool's indices as flat over output_shape (onnxruntime's reading, which round-trips "
    "MaxPool -> MaxUnpool); the case's data indexes the inferred shape and pads it (onnx's reference)": [
        "test_maxunpool_export_with_output_shape",
    ],
    "ill-conditioned: the light model's 1000 logits are ~9.5e9 and equal in exact arithmetic; the interpreter's "
    "numpy convolution rounds some channels 1 ulp (1024) lower, which the softmax turns into 0.00136 instead of "
    "0.001 (cpp rounds them alike and passes)": [
        "interpreter:test_squeezenet",
    ],
    "the expected outputs carry complex64 FFT rounding noise (1.9e-7) where the exact value is ~0, above the "
    "case's atol 1e-7; a float64 inverse DFT of the stored input misses them by 1.5e-6 too": [
        "test_dft_inverse",
        "test_dft_inverse_opset19",
    ],
}
KNOWN_FAILURES: dict[str, str] = {name: reason for reason, names in _KNOWN_FAILURES_BY_REASON.items() for name in names}

# ONNX element types with no Relay tensor type, and why.
_UNREPRESENTABLE = {
    "STRING": "Relay has no string tensors",
    "BFLOAT16": "Relay (and transpile's dtypes) have no bfloat16",
    "FLOAT8E4M3FN": "Relay has no 8-bit float types",
    "FLOAT8E4M3FNUZ": "Relay has no 8-bit float types",
    "FLOAT8E5M2": "Relay has no 8-bit float types",
    "FLOAT8E5M2FNUZ": "Relay has no 8-bit float types",
    "FLOAT8E8M0": "Relay has no 8-bit float types",
    "FLOAT4E2M1": "Relay has no 4-bit float types",
    "INT4": "Relay has no 4-bit integer types",
    "UINT4": "Relay has no 4-bit integer types",
    "INT2": "Relay has no 2-bit integer types",
    "UINT2": "Relay has no 2-bit integer types",
    "COMPLEX64": "Relay has no complex types",
    "COMPLEX128": "Relay has no complex types",
}


@dataclass(frozen=True)
class SuiteCase:
    """One case of the ONNX backend test data; `load()` gives (model, [(inputs, expected outputs)])."""

    kind: str
    name: str
    rtol: float
    atol: float
    loader: Callable = field(repr=False, compare=False)

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.name}"

    def load(self):
        return self.loader()


@dataclass
class CaseResult:
    case: str
    kind: str
    backend: str
    status: str
    reason: str = ""  # the grouping key: what is missing or what went wrong
    detail: str = ""  # the full message
    seconds: float = 0.0
    missing_ops: tuple = ()  # for `unsupported`: the operator kinds without a conversion
    bound_inputs: tuple = ()  # graph inputs the backend had to bind to their values (see onnx.backend)


def _onnx():
    import onnx

    return onnx


# ---------------------------------------------------------------------- cases


@functools.lru_cache(maxsize=None)
def suite_cases(kind: str) -> tuple[SuiteCase, ...]:
    """The cases of one kind, sorted by name."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    from onnx.backend.test.loader import load_model_tests

    if kind == "node":
        with warnings.catch_warnings():  # the case generators overflow casts on purpose
            warnings.simplefilter("ignore")
            tests = load_model_tests(kind="node")
        cases = [SuiteCase(kind, t.name, t.rtol, t.atol, functools.partial(_node_data, t)) for t in tests]
    elif kind == "light":
        tests = [t for t in load_model_tests(kind="real") if (t.url or "").startswith("onnx/backend/test/data/light/")]
        cases = [SuiteCase(kind, t.name, t.rtol, t.atol, functools.partial(_light_data, t.url)) for t in tests]
    else:
        tests = load_model_tests(kind=kind)
        cases = [
            SuiteCase(kind, t.name, t.rtol, t.atol, functools.partial(_directory_data, t.model_dir)) for t in tests
        ]
    return tuple(sorted(cases, key=lambda c: c.name))


def _node_data(test):
    onnx = _onnx()

    def array(value):
        return onnx.numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value

    data = [([array(v) for v in inputs], [array(v) for v in outputs]) for inputs, outputs in test.data_sets]
    return test.model, data


def _directory_data(model_dir):
    onnx = _onnx()
    model = onnx.load(os.path.join(model_dir, "model.onnx"))
    data = []
    for data_dir in sorted(glob.glob(os.path.join(model_dir, "test_data_set*"))):
        inputs = [
            _read_value(os.path.join(data_dir, f"input_{i}.pb"), model.graph.input[i].type)
            for i in range(len(glob.glob(os.path.join(data_dir, "input_*.pb"))))
        ]
        outputs = [
            _read_value(os.path.join(data_dir, f"output_{i}.pb"), model.graph.output[i].type)
            for i in range(len(glob.glob(os.path.join(data_dir, "output_*.pb"))))
        ]
        data.append((inputs, outputs))
    return model, data


def _read_value(path, type_proto):
    """A serialized tensor, sequence or optional, as onnx's runner reads it."""
    onnx = _onnx()
    with open(path, "rb") as f:
        content = f.read()
    if type_proto.HasField("sequence_type"):
        proto = onnx.SequenceProto()
        proto.ParseFromString(content)
        return onnx.numpy_helper.to_list(proto)
    if type_proto.HasField("optional_type"):
        proto = onnx.OptionalProto()
        proto.ParseFromString(content)
        return onnx.numpy_helper.to_optional(proto)
    proto = onnx.TensorProto()
    proto.ParseFromString(content)
    return onnx.numpy_helper.to_array(proto)


def _light_data(url):
    """The light model with onnx's deterministic dummy input and its stored expected outputs."""
    onnx = _onnx()
    from onnx.backend.test.runner import Runner

    package_root = os.path.dirname(os.path.dirname(os.path.abspath(onnx.__file__)))
    path = os.path.join(package_root, url)
    model = onnx.load(path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [
        Runner.generate_dummy_data(info, seed=0, name=model.graph.name, random=False)
        for info in model.graph.input
        if info.name not in initializers
    ]
    prefix = os.path.splitext(path)[0]
    outputs = []
    for i in range(len(model.graph.output)):
        expected = onnx.TensorProto()
        with open(f"{prefix}_output_{i}.pb", "rb") as f:
            expected.ParseFromString(f.read())
        outputs.append(onnx.numpy_helper.to_array(expected))
    return model, [(inputs, outputs)]


# ---------------------------------------------------------------------- expectations


def limitation(model) -> str | None:
    """Why `model` cannot run through transpile: a type Relay has no tensors of, or a non-tensor graph input."""
    onnx = _onnx()
    names = onnx.TensorProto.DataType.Name
    used = set()
    initializers = {t.name for t in model.graph.initializer}
    for info in model.graph.input:
        kind = info.type.WhichOneof("value")
        if info.name not in initializers and kind != "tensor_type":
            return (
                f"{kind.replace('_type', '')} graph input: the ONNX importer takes tensor graph inputs only "
                "(an ONNX sequence is an import-time list of tensors)"
            )

    def visit_type(type_proto):
        which = type_proto.WhichOneof("value")
        if which == "tensor_type":
            used.add(type_proto.tensor_type.elem_type)
        elif which == "sequence_type":
            visit_type(type_proto.sequence_type.elem_type)
        elif which == "optional_type":
            visit_type(type_proto.optional_type.elem_type)

    def visit_graph(graph):
        for info in list(graph.input) + list(graph.output) + list(graph.value_info):
            visit_type(info.type)
        used.update(t.data_type for t in graph.initializer)
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.name in ("to", "output_dtype", "dtype") and attribute.type == onnx.AttributeProto.INT:
                    used.add(attribute.i)
                if attribute.HasField("t"):
                    used.add(attribute.t.data_type)
                for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                    visit_graph(sub)

    visit_graph(model.graph)
    for elem_type in sorted(used):
        name = names(elem_type) if elem_type in onnx.TensorProto.DataType.values() else str(elem_type)
        if name in _UNREPRESENTABLE:
            return f"{_UNREPRESENTABLE[name]} ({name})"
    return None


def known_failure(name: str, backend: str) -> str | None:
    return KNOWN_FAILURES.get(f"{backend}:{name}") or KNOWN_FAILURES.get(name)


# ---------------------------------------------------------------------- running


def run_case(case: SuiteCase, backend: str) -> CaseResult:
    """Prepare, run and compare one case on `backend`; never raises for the case's own failures."""
    from onnx.backend.test.runner import Runner

    from ..relay.frontend.common import FrontendError, UnsupportedOperatorsError
    from ..relay.frontend.onnx.backend import TranspileBackend

    started = time.perf_counter()
    result = CaseResult(case.name, case.kind, backend, "passed")
    model, data = case.load()
    stage = "prepare"
    try:
        # Edge-case data (inf, NaN, overflow) makes numpy warn while folding or interpreting; the comparison
        # judges. The warnings filter too: the interpreter may evaluate on a thread, outside this errstate.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rep = TranspileBackend.prepare(model, backend=backend)
            for inputs, expected in data:
                stage = "run"
                outputs = rep.run(inputs)
                stage = "compare"
                Runner.assert_similar_outputs(expected, outputs, rtol=case.rtol, atol=case.atol, model_dir=case.id)
            result.bound_inputs = tuple(sorted(rep.bound_inputs))
    except UnsupportedOperatorsError as exc:
        ops = tuple(sorted({u.op for u in exc.unsupported}))
        details = sorted({f"{u.op}: {u.detail}" if u.detail else u.op for u in exc.unsupported})
        result.status, result.missing_ops = "unsupported", ops
        result.reason = "unsupported: " + "; ".join(details)
        result.detail = exc.message
    except AssertionError as exc:
        result.status, result.reason, result.detail = "failed", _mismatch_reason(str(exc)), str(exc)
    except FrontendError as exc:
        result.status, result.reason, result.detail = "failed", "import: " + _normalize(exc.message), exc.message
    except Exception as exc:  # a backend's compile or run error, or a crash in our code: all reported
        category = "compile" if stage == "prepare" else stage
        message = f"{type(exc).__name__}: {exc}"
        result.status, result.reason = "failed", f"{category}: {_normalize(message)}"
        result.detail = message + "\n" + "".join(traceback.format_exception(exc)[-6:])
    result.seconds = time.perf_counter() - started
    return _apply_expectations(result, model)


def _apply_expectations(result: CaseResult, model) -> CaseResult:
    why = known_failure(result.case, result.backend) or limitation(model)
    if why is None:
        return result
    if result.status == "passed":
        result.status, result.reason = "xpassed", f"passed, but listed as failing: {why}"
    else:
        result.detail = f"{result.reason}\n{result.detail}"
        result.status, result.reason = "expected", why
    return result


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(\.\d+)?(e-?\d+)?")
_NODE = re.compile(r"^ONNX: node (?:'[^']*'|\"[^\"]*\") \((\w+)\): ")


def _normalize(message: str) -> str:
    """A message's first line with node names, quoted names and numbers elided, so like failures group."""
    line = message.strip().splitlines()[0] if message.strip() else ""
    node = _NODE.match(line)
    if node:
        line = f"{node.group(1)}: {line[node.end():]}"
    line = _QUOTED.sub("'…'", line)
    line = _NUMBER.sub("N", line)
    return line[:200]


def _mismatch_reason(message: str) -> str:
    if "incorrect shape" in message:
        return "wrong result: output shape"
    if "Mismatched elements" in message or "Not equal to tolerance" in message:
        return "wrong result: values"
    if "dtype" in message or "DTypes" in message or "Items are not equal" in message:
        return "wrong result: " + _normalize(message.replace("\n", " "))
    return "wrong result: " + _normalize(message)


def run_suites(kinds, backends, name_filter: str | None = None, progress=None) -> list[CaseResult]:
    """Every case of `kinds` (matching `name_filter`) on every backend."""
    pattern = re.compile(name_filter) if name_filter else None
    results = []
    for backend in backends:
        for kind in kinds:
            cases = [c for c in suite_cases(kind) if pattern is None or pattern.search(c.name)]
            for i, case in enumerate(cases):
                result = run_case(case, backend)
                results.append(result)
                if progress is not None:
                    progress(f"[{backend} {kind} {i + 1}/{len(cases)}] {case.name}: {result.status}")
    return results


# ---------------------------------------------------------------------- reports


def summary_table(results: list[CaseResult]) -> str:
    """Counts of each outcome per (kind, backend), with the pass rate."""
    counts: dict[tuple, Counter] = defaultdict(Counter)
    seconds: dict[tuple, float] = defaultdict(float)
    for r in results:
        counts[(r.kind, r.backend)][r.status] += 1
        seconds[(r.kind, r.backend)] += r.seconds
    header = ["kind", "backend", "cases", *STATUSES, "pass %", "seconds"]
    rows = []
    order = {k: i for i, k in enumerate(KINDS)}
    for key in sorted(counts, key=lambda k: (k[1], order.get(k[0], 99))):
        c = counts[key]
        total = sum(c.values())
        rows.append(
            [
                key[0],
                key[1],
                str(total),
                *(str(c[s]) for s in STATUSES),
                f"{100 * c['passed'] / total:.1f}",
                f"{seconds[key]:.0f}",
            ]
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in rows)
    return "\n".join(lines)


def failure_report(
    results: list[CaseResult], statuses=("failed", "xpassed", "unsupported", "expected"), max_names: int | None = 20
) -> str:
    """The cases that did not pass, grouped: failures by reason, unsupported by missing operator.

    Each group lists its cases, the first `max_names` of them (all when None).
    """
    sections = []
    several_kinds = len({r.kind for r in results}) > 1
    several_backends = len({r.backend for r in results}) > 1

    def label(r: CaseResult) -> str:
        return (f"{r.kind}/" if several_kinds else "") + r.case + (f"@{r.backend}" if several_backends else "")

    for status in statuses:
        chosen = [r for r in results if r.status == status]
        if not chosen:
            continue
        groups: dict[str, list[CaseResult]] = defaultdict(list)
        for r in chosen:
            keys = r.missing_ops if status == "unsupported" and r.missing_ops else (r.reason,)
            for key in keys:
                groups[key].append(r)
        title = "unsupported operators (a case may miss several)" if status == "unsupported" else status
        sections.append(f"== {title}: {len(chosen)} case(s)")
        for key, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            names = sorted({label(r) for r in members})
            sections.append(f"  [{len(names)}] {key}")
            if status == "unsupported":
                details = sorted(
                    {
                        d
                        for r in members
                        for d in r.reason[len("unsupported: ") :].split("; ")
                        if d.startswith(key + ": ")
                    }
                )
                sections.extend(f"        {d}" for d in details[:5])
            shown = names if max_names is None else names[:max_names]
            more = f", … and {len(names) - len(shown)} more" if len(shown) < len(names) else ""
            sections.append("      " + ", ".join(shown) + more)
    return "\n".join(sections)


def main(argv=None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m transpile.testing.onnx_suites", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--backend", action="append", help="transpile backend (repeatable or comma-separated; default interpreter)"
    )
    parser.add_argument(
        "--kind", action="append", help=f"case kind (repeatable or comma-separated; default all: {', '.join(KINDS)})"
    )
    parser.add_argument("--filter", help="only cases whose name matches this regular expression")
    parser.add_argument("--json", help="write every case's result to this file")
    parser.add_argument("--quiet", action="store_true", help="no per-case progress on stderr")
    parser.add_argument("--all-names", action="store_true", help="list every case of each failure group")
    opts = parser.parse_args(argv)

    def split(values, default):
        return [v for value in (values or default) for v in value.split(",") if v]

    kinds = split(opts.kind, KINDS)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        parser.error(f"unknown kind(s) {unknown}; kinds: {', '.join(KINDS)}")
    backends = split(opts.backend, ["interpreter"])
    progress = None if opts.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    results = run_suites(kinds, backends, opts.filter, progress)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump([r.__dict__ for r in results], f, indent=1, default=list)
    print(summary_table(results))
    report = failure_report(results, max_names=None if opts.all_names else 20)
    if report:
        print()
        print(report)
    bound = sorted({f"{r.case} ({', '.join(r.bound_inputs)})" for r in results if r.bound_inputs})
    if bound:
        print(f"\npassing only with graph inputs bound to their values at import: {len(bound)} case(s)")
        print(
            "      "
            + ", ".join(bound if opts.all_names else bound[:20])
            + (" …" if len(bound) > 20 and not opts.all_names else "")
        )
    return 1 if any(r.status in ("failed", "xpassed") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
