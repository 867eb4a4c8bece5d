"""Mutation fuzzing of the parser and type checker: corpus programs with random token-level damage must
either parse and type-check or raise a TranspileError that says where (a span); nothing else."""

from __future__ import annotations

import collections
import json
import os
import random
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import TranspileError

__all__ = [
    "Seed",
    "load_corpus_seeds",
    "generated_seeds",
    "mutate",
    "check_source",
    "MutationReport",
    "run_mutation_fuzz",
]

TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<string>"(?:[^"\\\n]|\\.)*")
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:f16|f32|f64|f|i8|i16|i32|i64|u8|u16|u32|u64)?)
      | (?P<name>[%@]?[A-Za-z_][\w.]*|%\d+)
      | (?P<punct>->|=>|==|!=|<=|>=|.)""",
    re.S | re.X,
)
NUMBERS = ("0", "-1", "1", "2147483648", "-2147483649", "9223372036854775808", "1e309", "1e-400", "0.5f", "3f16",
           "-0f", "1.5i64", "00", "1e", "42u8", "99999999999999999999999999", "-", "2f64", "7i16")  # fmt: skip
DTYPES = ("float32", "float16", "float64", "int8", "int32", "int64", "uint8", "bool", "int7", "float", "int",
          "bfloat16", "handle", "void", "int8x4", "float32x0", "custom[foo]32", "Tensor")  # fmt: skip
NAMES = ("add", "nn.conv2d", "fn", "let", "if", "else", "match", "ref", "ref_read", "Cons", "Nil", "Some", "None",
         "List", "Tensor", "True", "False", "inf", "nan", "meta", "free_var", "def", "type", "extern", "@main",
         "%x", "%0", "%999", "@undefined", "_", "Primitive", "qnn.quantize", "on_device", "letFalse", "fooBar",
         "%", "@", "Option", "int32", "#[version = \"0.0.5\"]", "v0.0.4", "match?")  # fmt: skip
JUNK = ("\x00", "\n", "\r", "\t", "é", "\u200b", "\ufeff", "𝔸", "\\", '"', "'", "/*", "*/", "//", "#", "$", "`",
        "((((((((", "]]]]", "{", "}", "(", ")", "[", "]", ",", ";", ":", "=", "->", "=>", ".", ".0", ".99",
        "%" + "x" * 300, "9" * 60, "\x7f", "\u0301", "∀", "\U0001F600")  # fmt: skip
BRACKETS = "()[]{}"


@dataclass
class Seed:
    """A program to mutate: its text, whether it is a module or an expression, how to parse it."""

    name: str
    text: str
    kind: str = "module"
    init: str | None = None  # None, "prelude" or "storage" (the `extern type Storage` of std core.rly)


def _init_module(init: str | None):
    from ...relay import IRModule, Prelude

    if init is None:
        return None
    mod = IRModule()
    if init == "prelude":
        Prelude(mod)
    else:
        mod.add_extern_type("Storage")
    return mod


def check_source(text: str, kind: str = "module", init: str | None = None, source_name: str = "mutant"):
    """Parse and type-check `text`; returns None when it is a valid program (or raises)."""
    from ...relay import Op, parse, parse_expr
    from ...relay.transform import InferType
    from ...relay.typing import infer_type_expr

    init_module = _init_module(init)
    if kind == "module":
        InferType()(parse(text, source_name=source_name, init_module=init_module))
    else:
        expr = parse_expr(text, source_name=source_name, init_module=init_module)
        if isinstance(expr, Op):
            # The whole text is an operator's name: parse_expr returns the Op, as TVM's does. It is
            # not a program to type-check (an Op is a shared node with no source location).
            return
        infer_type_expr(expr, init_module)


def default_corpus_dir() -> Path | None:
    env = os.environ.get("TRANSPILE_CORPUS")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[4] / "shared" / "corpus" / "relay")
    return next((c for c in candidates if (c / "MANIFEST.json").exists()), None)


def load_corpus_seeds(corpus_dir: Path | None = None, max_bytes: int = 20000) -> list[Seed]:
    """The corpus files that parse standalone (no meta table, no pre-populated module), small ones."""
    corpus_dir = corpus_dir or default_corpus_dir()
    if corpus_dir is None:
        return []
    seeds = []
    for record in json.loads((corpus_dir / "MANIFEST.json").read_text()):
        if record["bytes"] > max_bytes or record.get("meta_refs") or any("init_module `" in n for n in record["notes"]):
            continue
        text = (corpus_dir / record["file"]).read_text()
        init = "storage" if any("std core.rly" in n for n in record["notes"]) else None
        if re.search(r"\b(Cons|Nil|List)\b", text) and "type List" not in text:
            init = "prelude"
        seeds.append(Seed(record["file"], text, record["kind"], init))
    return seeds


def generated_seeds(count: int, seed: int = 0) -> list[Seed]:
    """Programs of the differential fuzzer's generator: more operators and types than the corpus has."""
    from .generator import generate_program

    seeds = []
    for s in range(seed, seed + count):
        program = generate_program(s)
        seeds.append(Seed(f"generated-{s}", program.text, "module", "prelude" if program.uses_prelude else None))
    return seeds


# ---------------------------------------------------------------------------------------- mutations
def tokenize(text: str) -> list[tuple[str, str]]:
    return [(m.lastgroup, m.group()) for m in TOKEN.finditer(text)]


def _significant(tokens) -> list[int]:
    return [i for i, (kind, _) in enumerate(tokens) if kind not in ("space", "comment")]


def _mutate_once(tokens: list, rng: random.Random) -> list:
    significant = _significant(tokens)
    if not significant:
        return tokens + [("punct", rng.choice(JUNK))]
    i = rng.choice(significant)
    kind, text = tokens[i]
    op = rng.choice(
        ["delete", "duplicate", "swap", "number", "name", "dtype", "shape", "bracket", "truncate", "junk",
         "copy", "line", "junk"]  # fmt: skip
    )
    out = list(tokens)
    if op == "delete":
        del out[i]
    elif op == "duplicate":
        out.insert(i, tokens[i])
    elif op == "swap":
        j = rng.choice(significant)
        out[i], out[j] = out[j], out[i]
    elif op == "number":
        numbers = [k for k in significant if tokens[k][0] == "number"] or [i]
        out[rng.choice(numbers)] = ("number", rng.choice(NUMBERS))
    elif op == "name":
        names = [k for k in significant if tokens[k][0] == "name"] or [i]
        others = [t for kind_, t in tokens if kind_ == "name"]
        out[rng.choice(names)] = ("name", rng.choice(NAMES + tuple(others[:50])))
    elif op == "dtype":
        dtypes = [k for k in significant if tokens[k][1] in DTYPES or tokens[k][1].startswith(('"float', '"int'))]
        k = rng.choice(dtypes or [i])
        replacement = rng.choice(DTYPES)
        out[k] = ("name", f'"{replacement}"' if tokens[k][1].startswith('"') else replacement)
    elif op == "shape":
        # A dimension inside `Tensor[(...)]` or `shape=[...]`: another number, `?`, nothing, or a name.
        numbers = [k for k in significant if tokens[k][0] == "number"] or [i]
        out[rng.choice(numbers)] = ("punct", rng.choice(["?", "", "0", "-1", "%x", "1, 2", "(3)", "Any"]))
    elif op == "bracket":
        brackets = [k for k in significant if tokens[k][1] in BRACKETS] or [i]
        k = rng.choice(brackets)
        choice = rng.random()
        if choice < 0.4:
            del out[k]
        elif choice < 0.7:
            out[k] = ("punct", rng.choice(BRACKETS))
        else:
            out.insert(k, ("punct", rng.choice(BRACKETS)))
    elif op == "truncate":
        out = out[:i]
    elif op == "junk":
        out.insert(i + rng.choice([0, 1]), ("punct", rng.choice(JUNK)))
    elif op == "copy":
        j = rng.choice(significant)
        out.insert(i, tokens[j])
    elif op == "line":
        text = "".join(t for _, t in out)
        lines = text.split("\n")
        k = rng.randrange(len(lines))
        if rng.random() < 0.5:
            del lines[k]
        else:
            lines.insert(k, lines[rng.randrange(len(lines))])
        return tokenize("\n".join(lines))
    return out


def mutate(text: str, rng: random.Random, count: int | None = None) -> str:
    """`text` with 1-3 random token-level mutations (deletions, swaps, other numbers, names, dtypes...)."""
    tokens = tokenize(text)
    for _ in range(count or rng.choice([1, 1, 1, 2, 3])):
        tokens = _mutate_once(tokens, rng)
    return "".join(t for _, t in tokens)


# ---------------------------------------------------------------------------------------- running
class Hang(Exception):
    """A mutant took longer than the time limit."""


def _with_time_limit(seconds: float, function):
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return function()

    def expire(signum, frame):
        raise Hang(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return function()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _message_class(message: str) -> str:
    first = message.splitlines()[0] if message else ""
    first = re.sub(r"^mutant:\d+:\d+: ", "", first)
    first = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", first)
    first = re.sub(r"[%@][\w.]+", "NAME", first)
    return re.sub(r"\d+", "N", first)[:140]


@dataclass
class MutationReport:
    """Outcomes of a mutation run: counts per kind and the offending classes with an example each."""

    known_gaps: tuple = ()  # regexes of location-less messages known and tracked (reported, not failures)
    counts: collections.Counter = field(default_factory=collections.Counter)
    classes: dict = field(default_factory=dict)  # (kind, class) -> [count, example text, full message, seed name]
    seconds: float = 0.0

    def add(self, kind: str, seed: Seed, mutant: str, message: str = "") -> None:
        if kind == "unlocated" and any(re.search(p, message) for p in self.known_gaps):
            kind = "known_gap"
        self.counts[kind] += 1
        if kind in ("ok", "located"):
            return
        key = (kind, _message_class(message))
        entry = self.classes.setdefault(key, [0, mutant, message, seed.name])
        entry[0] += 1

    @property
    def ok(self) -> bool:
        return not any(self.counts[k] for k in ("crash", "unlocated", "hang"))

    def failures(self, kinds=("crash", "unlocated", "hang")) -> list:
        return [(k, c, e) for (k, c), e in self.classes.items() if k in kinds]

    def summary(self) -> str:
        total = sum(self.counts.values())
        lines = [
            f"{total} mutants in {self.seconds:.1f} s: {self.counts['ok']} valid, {self.counts['located']} "
            f"TranspileError with a location, {self.counts['known_gap']} known location gaps, "
            f"{self.counts['unlocated']} without a location, {self.counts['crash']} other exceptions, "
            f"{self.counts['hang']} hangs"
        ]
        for (kind, message_class), (count, example, message, seed_name) in sorted(
            self.classes.items(), key=lambda kv: -kv[1][0]
        ):
            lines.append(f"  {count:6d}  {kind:9s} {message_class}")
            lines.append(f"          e.g. from {seed_name}: {message.splitlines()[0][:200] if message else ''}")
        return "\n".join(lines)


def run_one(seed: Seed, mutant: str, report: MutationReport, time_limit: float = 20.0) -> None:
    try:
        _with_time_limit(time_limit, lambda: check_source(mutant, seed.kind, seed.init))
    except Hang as exc:
        report.add("hang", seed, mutant, str(exc))
    except TranspileError as exc:
        report.add("located" if exc.span is not None else "unlocated", seed, mutant, exc.message)
    except RecursionError as exc:
        report.add("crash", seed, mutant, f"RecursionError: {exc}")
    except Exception as exc:  # the finding: anything but a TranspileError
        report.add("crash", seed, mutant, f"{type(exc).__name__}: {exc}")
    else:
        report.add("ok", seed, mutant)


def run_mutation_fuzz(
    mutants: int,
    seed: int = 0,
    seeds: list[Seed] | None = None,
    known_gaps: tuple = (),
    progress=None,
    generated_share: float = 0.3,
) -> MutationReport:
    """`mutants` mutants of the corpus (and of generated programs), each parsed and type-checked."""
    import warnings

    rng = random.Random(seed)
    if seeds is None:
        corpus = load_corpus_seeds()
        generated = generated_seeds(max(20, int(len(corpus) * generated_share) if corpus else 200), seed)
        seeds = corpus + generated
    report = MutationReport(known_gaps=tuple(known_gaps))
    start = last = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(mutants):
            source = rng.choice(seeds)
            run_one(source, mutate(source.text, rng), report)
            now = time.perf_counter()
            if progress is not None and now - last > 5:
                last = now
                progress(f"[mutation] {n + 1}/{mutants} mutants, {now - start:.0f} s, {report.counts['crash']} crashes, "
                         f"{report.counts['unlocated']} without location")  # fmt: skip
    report.seconds = time.perf_counter() - start
    return report
