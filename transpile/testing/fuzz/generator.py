"""Seeded generator of well-typed random Relay programs (text format 0.0.5) with argument values.

`generate_program(seed)` is deterministic per seed. The generator tracks types itself (so programs
type-check by construction; `tests/test_fuzz_differential.py` checks that with InferType) and also
whether a float value is *exact* — bit-identical on every correct backend (parameters, max/min,
shape ops, casts...). Discontinuous operations (comparisons, floor, casts to int or bool, argmax)
only ever consume exact values, so a last-bit difference of a sum or an `exp` between two backends
(legitimate: different summation order, FMA contraction) can never turn into a different branch or
integer, which would be reported as a false mismatch.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import numpy as np

from .gentypes import Dim, FuncT, ListT, OptionT, RefT, TensorT, TupleT, is_static
from .structures import StructureProducers
from .tensor_ops import TensorProducers
from .values import random_tensor

__all__ = ["GeneratorConfig", "GeneratedProgram", "ProgramGenerator", "generate_program", "GenerationError"]

HEADER = '#[version = "0.0.5"]'
PRELUDE_NAMES = re.compile(r"\b(List|Option|Cons|Nil|Some|None)\b|@(map|foldl|rev|length)\b")

# The optional constructs a program may use; tir handles none but recursion (see TirBackend.capabilities).
OPTIONAL = ("closures", "refs", "adts", "dynamic", "recursion")


class GenerationError(Exception):
    """The generator painted itself into a corner (a bug of the generator, retried with fresh choices)."""


@dataclass(frozen=True)
class GeneratorConfig:
    max_depth: int = 4
    fuel: tuple = (25, 90)  # range of the expression budget of one program
    max_lets: int = 4
    max_params: int = 4
    first_order_share: float = 0.45  # programs with no closures, refs, ADTs or `?` dims (what tir runs)
    edge_rate: float = 0.15  # fraction of argument elements replaced by edge values (in 40% of arguments)
    max_helpers: int = 5


@dataclass
class GeneratedProgram:
    """One generated test program: standalone module text, its entry's parameters and arguments."""

    seed: int
    text: str
    param_types: list
    inputs: list
    features: frozenset
    uses_prelude: bool
    global_names: tuple  # the globals the text defines, `main` included

    def renamed(self, prefix: str) -> str:
        """The definitions with every own global `@name` renamed `@{prefix}name`, header dropped."""
        names = "|".join(sorted(map(re.escape, self.global_names), key=len, reverse=True))
        body = self.text.split("\n", 1)[1]
        return re.sub(rf"@({names})(?![\w.])", lambda m: f"@{prefix}{m.group(1)}", body)


@dataclass
class Binding:
    name: str
    type: object
    exact: bool


def exact_type(t) -> bool:
    """Whether every value of the type is exact by nature (integers and booleans)."""
    return isinstance(t, TensorT) and not t.is_float


class Block:
    """A let sequence under construction: the variables in scope and the bindings emitted so far."""

    def __init__(self, gen: "ProgramGenerator", scope):
        self.gen = gen
        self.scope: list[Binding] = list(scope)
        self.lines: list[str] = []

    def bind(self, text: str, t, exact: bool = False, annotate: bool = False) -> str:
        name = self.gen.fresh("v")
        annotation = f": {t.text()}" if annotate else ""
        self.lines.append(f"let %{name}{annotation} = {text};")
        self.scope.append(Binding(name, t, exact or exact_type(t)))
        self.gen.note("let")
        return f"%{name}"

    def vars_of(self, t, exact: bool = False) -> list[str]:
        return [f"%{b.name}" for b in self.scope if b.type == t and (b.exact or not exact)]

    def bindings(self, kind) -> list[Binding]:
        return [b for b in self.scope if isinstance(b.type, kind)]

    def tensor_shapes(self) -> list:
        return [b.type.shape for b in self.scope if isinstance(b.type, TensorT)]

    def render(self, result: str) -> str:
        return "\n".join([*self.lines, result])


def indent(text: str, by: str = "  ") -> str:
    return by + text.replace("\n", "\n" + by)


def literal(value, dtype: str) -> str:
    if dtype == "bool":
        return "True" if value else "False"
    if dtype == "int32":
        return str(int(value))
    if dtype == "int64":
        return f"{int(value)}i64"
    text = repr(float(value))
    if text.endswith(".0"):
        text = text[:-2]
    return text + ("f" if dtype == "float32" else "f64")


class ProgramGenerator(TensorProducers, StructureProducers):
    """Generates one program; the producers (mixins) each build an expression of a requested type."""

    def __init__(self, seed: int, config: GeneratorConfig | None = None):
        self.seed = seed
        self.config = config or GeneratorConfig()
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.counter = 0
        self.used: set[str] = set()
        self.helpers: list[str] = []
        self.global_names: list[str] = ["main"]
        self.fuel = self.rng.randint(*self.config.fuel)
        if self.rng.random() < self.config.first_order_share:
            self.enabled = {"recursion"} if self.rng.random() < 0.3 else set()
        else:
            self.enabled = {f for f in OPTIONAL if self.rng.random() < 0.45} or {self.rng.choice(OPTIONAL)}

    # ------------------------------------------------------------------ bookkeeping
    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def new_global(self, stem: str) -> str:
        name = self.fresh(stem)
        self.global_names.append(name)
        return name

    def note(self, feature: str) -> None:
        self.used.add(feature)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def on(self, feature: str) -> bool:
        return feature in self.enabled

    # ------------------------------------------------------------------ types
    def random_dtype(self, allow_bool: bool = True) -> str:
        weights = {"float32": 5, "float64": 1.5, "int32": 3, "int64": 1.5, "bool": 1.5 if allow_bool else 0}
        return self.rng.choices(list(weights), weights=list(weights.values()))[0]

    def random_static_shape(self, max_rank: int = 3) -> tuple:
        rank = self.rng.choices(range(max_rank + 1), weights=[3, 3, 3, 1.5, 0.5][: max_rank + 1])[0]
        return tuple(0 if self.chance(0.03) else self.rng.randint(1, 4) for _ in range(rank))

    def random_tensor_type(self, allow_bool: bool = True) -> TensorT:
        return TensorT(self.random_dtype(allow_bool), self.random_static_shape())

    def random_param_type(self) -> TensorT:
        t = self.random_tensor_type()
        if self.on("dynamic") and t.rank and self.chance(0.5):
            shape = list(t.shape)
            for i in range(len(shape)):
                if self.chance(0.6):
                    shape[i] = Dim(self.rng.choice([0, 1, 2, 3, 3, 4]) if self.chance(0.9) else 0)
            t = t.with_shape(shape)
            self.note("dynamic")
        return t

    def let_type(self, blk: Block):
        """The type of the next let binding: mostly tensors related to what is in scope."""
        roll = self.rng.random()
        shapes = blk.tensor_shapes()
        if roll < 0.4 and shapes:
            return TensorT(self.random_dtype(), self.rng.choice(shapes))
        if roll < 0.55 and shapes:
            derived = self.derived_shape(self.rng.choice(shapes))
            if derived is not None:
                return TensorT(self.random_dtype(), derived)
        if roll < 0.8:
            return self.random_tensor_type()
        return self.random_value_type(blk)

    def random_value_type(self, blk: Block, depth: int = 0):
        """Any value type the enabled features allow (tensors, tuples, closures, refs, Lists, Options)."""
        shapes = blk.tensor_shapes()
        element = TensorT(self.random_dtype(), self.rng.choice(shapes)) if shapes and self.chance(0.5) else None
        element = element or self.random_tensor_type()
        kinds = ["tuple"]
        if self.on("closures") and depth == 0:
            kinds += ["func", "func"]
        if self.on("refs"):
            kinds += ["ref", "ref"]
        if self.on("adts"):
            kinds += ["list", "list", "option"]
        kind = self.rng.choice(kinds)
        if kind == "tuple":
            return TupleT(
                tuple(self.random_tensor_type() if self.chance(0.5) else element for _ in range(self.rng.randint(1, 3)))
            )
        if kind == "func":
            params = tuple(self.random_tensor_type() for _ in range(self.rng.randint(0, 2)))
            return FuncT(params, element)
        if kind == "ref":
            return RefT(element)
        if kind == "list":
            return ListT(element)
        return OptionT(element)

    def derived_shape(self, shape: tuple) -> tuple | None:
        """A shape one structural step away (drop an axis, transpose, add a unit axis)."""
        if not shape:
            return (1,)
        roll = self.rng.random()
        if roll < 0.4:
            i = self.rng.randrange(len(shape))
            return shape[:i] + shape[i + 1 :]
        if roll < 0.7 and len(shape) > 1:
            perm = list(shape)
            self.rng.shuffle(perm)
            return tuple(perm)
        i = self.rng.randint(0, len(shape))
        return shape[:i] + (1,) + shape[i:]

    def constructible(self, t: TensorT, blk: Block) -> bool:
        """Whether a leaf of this tensor type exists: static, or a variable in scope has its shape."""
        return is_static(t) or t.shape in blk.tensor_shapes()

    # ------------------------------------------------------------------ expressions
    def expr(self, t, blk: Block, depth: int, exact: bool = False) -> str:
        """An expression of type `t` (exact when asked: bit-identical on every correct backend)."""
        self.fuel -= 1
        if depth > 0 and self.fuel > 0:
            for producer in self.weighted_order(self.producers(t)):
                text = producer(t, blk, depth - 1, exact)
                if text is not None:
                    return text
        return self.leaf(t, blk, exact)

    def weighted_order(self, weighted):
        keys = [(self.rng.random() ** (1.0 / w), i) for i, (w, _) in enumerate(weighted) if w > 0]
        return [weighted[i][1] for _, i in sorted(keys, reverse=True)]

    def producers(self, t) -> list:
        if isinstance(t, TensorT):
            return self.tensor_producers(t) + self.structure_producers(t)
        return self.structure_producers(t)

    def leaf(self, t, blk: Block, exact: bool = False) -> str:
        names = blk.vars_of(t, exact)
        if names and self.chance(0.8):
            return self.rng.choice(names)
        if isinstance(t, TensorT):
            adapted = self.adapt(t, blk, exact) if self.chance(0.7) else None
            if adapted is not None:
                return adapted
            text = self.constant(t, blk)
            if text is None:
                if names:
                    return self.rng.choice(names)
                raise GenerationError(f"no leaf of type {t.text()} in scope")
            return text
        if isinstance(t, TupleT):
            return "(" + "".join(self.leaf(f, blk, exact) + ", " for f in t.fields).rstrip(" ") + ")"
        if isinstance(t, FuncT):
            return self.closure_literal(t, blk, 0)
        if isinstance(t, RefT):
            self.note("ref")
            return f"ref({self.leaf(t.inner, blk, exact)})"
        if isinstance(t, ListT):
            self.note("list")
            return "Nil"
        if isinstance(t, OptionT):
            self.note("option")
            return "None"
        raise GenerationError(f"cannot build a leaf of {t!r}")

    def adapt(self, t: TensorT, blk: Block, exact: bool) -> str | None:
        """A variable of another tensor type turned into `t` (cast, reshape, broadcast_to, a slice of it
        flattened): keeps the arguments flowing into the program where a constant would cut them off."""
        options = [
            b for b in blk.scope if isinstance(b.type, TensorT) and (b.exact or not exact or not b.type.is_float)
        ]
        options = [b for b in options if not (b.type.is_float and not t.is_float)]  # float to int/bool needs care
        self.rng.shuffle(options)
        for b in options[:4]:
            source, text = b.type, f"%{b.name}"
            if source.shape == t.shape:
                pass
            elif not (is_static(source) and is_static(t)) or 0 in t.shape:
                continue  # (a 0 in reshape's `newshape` means "copy the input's dimension")
            elif source.size() == t.size():
                text = f"reshape({text}, newshape={_dims(t.shape) if t.shape else '[]'})"
                self.note("op:reshape")
            elif _broadcasts_to(source.shape, t.shape):
                text = f"broadcast_to({text}, shape={_dims(t.shape)})"
                self.note("op:broadcast_to")
            elif source.size() > t.size():
                start = self.rng.randint(0, source.size() - t.size())
                flat = f"strided_slice(reshape({text}, newshape=[-1]), begin=[{start}], end=[{start + t.size()}], strides=[1])"
                text = f"reshape({flat}, newshape={_dims(t.shape) if t.shape else '[]'})"
                self.note("op:strided_slice")
            else:
                continue
            if source.dtype != t.dtype:
                text = f'cast({text}, dtype="{t.dtype}")'
                self.note("op:cast")
            return text
        return None

    def constant(self, t: TensorT, blk: Block) -> str | None:
        if not is_static(t):
            same = [b for b in blk.scope if isinstance(b.type, TensorT) and b.type.shape == t.shape]
            if not same:
                return None
            source = self.rng.choice(same)
            kind = self.rng.choice(["zeros_like", "ones_like"])
            self.note(f"op:{kind}")
            if source.type.dtype == t.dtype:
                return f"{kind}(%{source.name})"
            return f'cast({kind}(%{source.name}), dtype="{t.dtype}")'
        if not t.shape and self.chance(0.7):
            self.note("literal")
            return literal(self.random_literal(t.dtype), t.dtype)
        dims = "[" + ", ".join(str(d) for d in t.shape) + "]"
        kind = self.rng.choice(["zeros", "ones", "full"])
        self.note(f"op:{kind}")
        if kind == "full":
            return f'full({literal(self.random_literal(t.dtype), t.dtype)}, shape={dims}, dtype="{t.dtype}")'
        return f'{kind}(shape={dims}, dtype="{t.dtype}")'

    def random_literal(self, dtype: str):
        if dtype == "bool":
            return self.chance(0.5)
        if dtype in ("int32", "int64"):
            if self.chance(0.08):
                info = np.iinfo(dtype)
                return self.rng.choice([info.min, info.max])
            return self.rng.randint(-5, 5)
        return self.rng.choice([0.0, 1.0, -1.0, 0.5, 2.0, -3.25, 100.0, 1e-3])

    # ------------------------------------------------------------------ blocks and the program
    def block(self, t, scope, depth: int, exact: bool = False, max_lets: int | None = None) -> str:
        blk = Block(self, scope)
        for _ in range(self.rng.randint(0, self.config.max_lets if max_lets is None else max_lets)):
            if self.fuel <= 0:
                break
            let_t = self.let_type(blk)
            let_exact = self.chance(0.5)
            text = self.expr(let_t, blk, depth, exact=let_exact)
            blk.bind(text, let_t, let_exact, annotate=self.chance(0.3) or _needs_annotation(let_t))
        result = self.expr(t, blk, depth, exact)
        return blk.render(result)

    def function_text(self, name: str, params, ret, body: str) -> str:
        plist = ", ".join(f"%{b.name}: {b.type.text()}" for b in params)
        return f"def @{name}({plist}) -> {ret.text()} {{\n{indent(body)}\n}}"

    def generate(self) -> GeneratedProgram:
        params = [
            Binding(self.fresh("p"), self.random_param_type(), True)
            for _ in range(self.rng.randint(1, self.config.max_params))
        ]
        for b in params:
            self.note(f"param:{b.type.dtype}")
            self.note("scalar" if not b.type.shape else "tensor")
        ret = self.result_type(Block(self, params))
        body = self.block(ret, params, self.config.max_depth)
        main = self.function_text("main", params, ret, body)
        text = "\n\n".join([HEADER, *self.helpers, main]) + "\n"
        edge_rate = self.config.edge_rate if self.chance(0.4) else 0.0
        inputs = [random_tensor(b.type, self.np_rng, edge_rate) for b in params]
        if edge_rate:
            self.note("edge_values")
        return GeneratedProgram(
            seed=self.seed,
            text=text,
            param_types=[b.type for b in params],
            inputs=inputs,
            features=frozenset(self.used),
            uses_prelude=bool(PRELUDE_NAMES.search(text)),
            global_names=tuple(self.global_names),
        )

    def result_type(self, blk: Block):
        def one():
            if self.on("adts") and self.chance(0.25):
                return self.rng.choice([ListT, OptionT])(self.random_tensor_type())
            shapes = blk.tensor_shapes()
            if shapes and self.chance(0.5):
                return TensorT(self.random_dtype(), self.rng.choice(shapes))
            return self.random_tensor_type()

        if self.chance(0.5):
            return one()
        self.note("tuple_result")
        return TupleT(tuple(one() for _ in range(self.rng.randint(1, 3))))


def _dims(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _broadcasts_to(source: tuple, target: tuple) -> bool:
    if len(source) > len(target):
        return False
    return all(s in (1, d) for s, d in zip(reversed(source), reversed(target)))


def _needs_annotation(t) -> bool:
    """Let-bound values whose type inference cannot see from the value alone (`Nil`, `None`)."""
    return isinstance(t, (ListT, OptionT)) or (isinstance(t, TupleT) and any(_needs_annotation(f) for f in t.fields))


def generate_program(seed: int, config: GeneratorConfig | None = None) -> GeneratedProgram:
    """The program of `seed`: the same text and arguments on every call."""
    for attempt in range(20):
        try:
            program = ProgramGenerator(seed if attempt == 0 else seed * 1000 + attempt, config).generate()
            program.seed = seed
            return program
        except GenerationError:
            continue
    raise GenerationError(f"seed {seed}: no program after 20 attempts")
