"""The corpus's whole models (MNIST, MobileNet v2, ResNet-50 v2, ResNeXt-50, GPT-2) with sensible random weights.

    model = load_model("mobilenet_v2", seed=0)     # or "menangerie__9", or a path to a .relay file
    model.module                                   # parsed IRModule, weights bound as constants
    model.constants                                # the weights as read-only numpy arrays, by meta index
    model.inputs(seed=1)                           # random arguments for @main

Each weight's value depends on its *role*, found by walking the parsed program and looking at
where the constant is used (which operator, which argument): He-scaled convolution and dense
weights, batch-norm statistics that keep activations in range (positive variances — N(0, 0.1)
variances give NaN after the square root), small biases, scales near 1. Values are deterministic
in (seed, constant index), so tests and benchmarks that ask for the same model get the same bytes.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

__all__ = [
    "MODELS",
    "Model",
    "Role",
    "corpus_dir",
    "model_path",
    "constant_roles",
    "random_weights",
    "load_model",
    "random_inputs",
]

# Friendly names of the corpus's whole models.
MODELS = {
    "mnist": "menangerie__1",
    "mobilenet_v2": "menangerie__9",
    "resnet50_v2": "menangerie__7",
    "resnext50": "menangerie__12",
    "gpt2": "menangerie__2",
}

# How far the residual branch's last weights are scaled down (see `_residual_branch_ends`).
RESIDUAL_SCALE = 0.5


@dataclass(frozen=True)
class Role:
    """How one constant is used: a kind (`conv_weight`, `bn_var`, `bias`, ...) and the fan-in of a weight."""

    kind: str
    fan_in: int = 1
    residual: bool = False  # a weight whose result is added to a skip connection
    after_relu: bool = True  # a weight applied to rectified data (He's gain of 2), else linear data (gain 1)


@dataclass
class Model:
    """A corpus model with its weights bound: the module, the weights and their roles."""

    name: str
    path: Path
    module: object
    constants: list[np.ndarray]
    roles: list[Role] = field(repr=False)
    seed: int = 0

    @property
    def weight_bytes(self) -> int:
        return sum(c.nbytes for c in self.constants)

    def inputs(self, seed: int = 1) -> list[np.ndarray]:
        return random_inputs(self.module, seed)


# ----- where the corpus is ---------------------------------------------------------------------


def corpus_dir() -> Path:
    """$TRANSPILE_CORPUS, else `shared/corpus/relay` beside the checkout this package runs from."""
    override = os.environ.get("TRANSPILE_CORPUS")
    if override:
        return Path(override)
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "shared" / "corpus" / "relay"
        if candidate.is_dir():
            return candidate
    return here.parents[3] / "shared" / "corpus" / "relay"


def model_path(model: str | os.PathLike) -> Path:
    """The `.relay` file of a model given by friendly name, corpus name (`menangerie__9`) or path."""
    name = str(model)
    name = MODELS.get(name, name)
    path = Path(name)
    if path.suffix != ".relay":
        path = corpus_dir() / f"{name}.relay"
    if not path.is_file():
        raise FileNotFoundError(f"no Relay model at {path} (set TRANSPILE_CORPUS to the corpus's relay/ folder)")
    return path


def _meta_entries(path: Path) -> list[dict]:
    meta = path.with_name(path.name[: -len(".relay")] + ".meta.json")
    return json.loads(meta.read_text())["tables"].get("relay.Constant", [])


# ----- roles: where each constant is used ------------------------------------------------------


def _fan_in_conv(shape: tuple, layout: str) -> int:
    # Everything but the output channels feeds one output element (per group: shape holds I/groups).
    layout = layout or "OIHW"
    return math.prod(shape) // shape[layout.index("O")] if len(layout) == len(shape) else math.prod(shape[1:])


def _role_of_use(op: str, position: int, attrs, shape: tuple) -> Role | None:
    """The role a constant takes as argument `position` of operator `op`, or None when that says nothing."""
    if op == "nn.conv2d" and position == 1:
        return Role("conv_weight", _fan_in_conv(shape, attrs.get("kernel_layout", "OIHW")))
    if op in ("nn.dense", "nn.matmul") and position == 1:
        transposed = op == "nn.dense" or attrs.get("transpose_b", False)
        return Role("dense_weight", shape[-1] if transposed else shape[0])
    if op == "nn.batch_matmul" and position == 1:
        return Role("dense_weight", shape[-1] if attrs.get("transpose_b", True) else shape[-2])
    if op == "nn.batch_norm" and position >= 1:
        return Role(("", "bn_gamma", "bn_beta", "bn_mean", "bn_var")[position])
    if op == "take" and position == 0:
        return Role("embedding")
    if op in ("add", "subtract", "nn.bias_add"):
        return Role("bias")
    if op in ("multiply", "divide"):
        return Role("scale")
    return None


# Stronger roles win when one constant is used several ways.
_PRIORITY = ["conv_weight", "dense_weight", "embedding", "bn_var", "bn_gamma", "bn_mean", "bn_beta", "scale", "bias"]


def _children(node) -> tuple:
    from ..relay import expr as E

    if isinstance(node, E.Call):
        return (node.op, *node.args)
    if isinstance(node, E.Function):
        return (node.body,)
    if isinstance(node, E.Tuple):
        return node.fields
    if isinstance(node, E.TupleGetItem):
        return (node.tuple_value,)
    if isinstance(node, E.Let):
        return (node.value, node.body)
    if isinstance(node, E.If):
        return (node.cond, node.true_branch, node.false_branch)
    return ()


def _graph(module) -> tuple[list, dict[int, int]]:
    """Every node reachable from the module's functions, once each, and how many parents use each one.

    Iterative, not recursive: the models are chains of hundreds of calls.
    """
    nodes, uses = [], {}
    stack = [fn for _, fn in module]
    while stack:
        node = stack.pop()
        if id(node) in uses:
            uses[id(node)] += 1
            continue
        uses[id(node)] = 1
        nodes.append(node)
        stack.extend(_children(node))
    for fn in (fn for _, fn in module):
        uses[id(fn)] -= 1  # the module's own reference is not a use
    return nodes, uses


def _operator_calls(nodes):
    from ..relay import expr as E

    return [n for n in nodes if isinstance(n, E.Call) and isinstance(n.op, E.Op)]


def _residual_branch_ends(nodes, uses: dict[int, int], index_of: dict[int, int]) -> set[int]:
    """Indices of the weights that end a residual branch: the last conv/dense before a skip-connection `add`.

    In `add(a, b)` of two computed tensors, an operand used only by this add is a branch; the skip
    input is also used by the branch it feeds. Every block adds its branch's variance to the trunk's;
    scaling each branch's last weights down (as Fixup / zero-init-residual do) keeps 16 blocks from
    growing the activations by orders of magnitude.
    """
    from ..relay import expr as E

    def is_constant(e):
        return isinstance(e, E.Constant)

    ends: set[int] = set()
    for call in _operator_calls(nodes):
        if call.op.name != "add" or any(is_constant(a) for a in call.args):
            continue
        for node in call.args:
            if uses.get(id(node), 0) != 1:
                continue  # the skip input
            while True:  # back through per-channel affine ops, relu and reshapes to the weight
                if isinstance(node, E.TupleGetItem):
                    node = node.tuple_value
                elif not (isinstance(node, E.Call) and isinstance(node.op, E.Op)):
                    break
                elif node.op.name in ("nn.conv2d", "nn.dense"):
                    if id(node.args[1]) in index_of:
                        ends.add(index_of[id(node.args[1])])
                    break
                elif node.op.name in ("nn.batch_norm", "nn.relu", "reshape", "clip") or (
                    node.op.name in ("add", "nn.bias_add") and is_constant(node.args[1])
                ):
                    node = node.args[0]
                else:
                    break
    return ends


def _rectified(node) -> bool:
    """Whether a weight's input comes out of a relu (through reshapes and padding): He's factor 2 applies."""
    from ..relay import expr as E

    while isinstance(node, E.Call) and isinstance(node.op, E.Op):
        if node.op.name in ("nn.relu", "clip", "nn.max_pool2d"):
            return True
        if node.op.name not in ("reshape", "nn.pad", "nn.batch_flatten", "nn.global_avg_pool2d", "nn.avg_pool2d"):
            return False
        node = node.args[0]
    return False


def constant_roles(module, placeholders: list, shapes: list[tuple]) -> list[Role]:
    """The role of each meta constant (by index), found from its uses in the parsed `module`.

    `placeholders[i]` is the Constant node the module holds for `meta[relay.Constant][i]`.
    """
    from ..relay import expr as E

    index_of = {id(c): i for i, c in enumerate(placeholders)}
    nodes, uses = _graph(module)
    found: dict[int, list[Role]] = {}
    for call in _operator_calls(nodes):
        for position, arg in enumerate(call.args):
            fields = arg.fields if isinstance(arg, E.Tuple) else (arg,)
            for item in fields:
                if isinstance(item, E.Constant) and id(item) in index_of:
                    i = index_of[id(item)]
                    role = _role_of_use(call.op.name, position, call.attrs or {}, shapes[i])
                    if role is not None and role.kind in ("conv_weight", "dense_weight"):
                        role = replace(role, after_relu=_rectified(call.args[0]))
                    if role is not None:
                        found.setdefault(i, []).append(role)
    residual = _residual_branch_ends(nodes, uses, index_of)
    roles = []
    for i in range(len(placeholders)):
        candidates = sorted(found.get(i, []), key=lambda r: _PRIORITY.index(r.kind))
        role = candidates[0] if candidates else Role("other")
        if i in residual:
            role = replace(role, residual=True)
        roles.append(role)
    return roles


# ----- values ----------------------------------------------------------------------------------


def _value(role: Role, shape: tuple, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """A random tensor suited to the role; float32 draws straight away (ResNet-50 has 25 M weights)."""
    if not np.issubdtype(np.dtype(dtype), np.floating):
        return rng.integers(0, 4, shape).astype(dtype)

    def normal(std):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    def uniform(low, high):
        return rng.uniform(low, high, shape).astype(np.float32)

    kind = role.kind
    if kind in ("conv_weight", "dense_weight"):
        # He (std = sqrt(2 / fan_in)) keeps the second moment through relu + conv; on linear input
        # (MobileNet's bottlenecks) the gain is 1, else every block doubles the variance.
        gain = 2.0 if role.after_relu else 1.0
        data = normal(math.sqrt(gain / max(role.fan_in, 1)) * (RESIDUAL_SCALE if role.residual else 1.0))
    elif kind == "bn_gamma":
        data = uniform(0.8, 1.2)
    elif kind in ("bn_beta", "bn_mean"):
        data = normal(0.1)
    elif kind == "bn_var":
        data = uniform(0.5, 1.5)  # positive: the batch norm takes its square root
    elif kind == "scale":
        data = uniform(0.5, 1.5)
    elif kind == "embedding":
        data = normal(1.0)
    else:  # biases and anything whose use says nothing
        data = normal(0.1)
    return data.astype(dtype, copy=False)


def random_weights(model: str | os.PathLike, seed: int = 0, module=None) -> tuple[list[np.ndarray], list[Role]]:
    """Weights for every `meta[relay.Constant][i]` of a corpus model, and the role each was made for.

    Values recorded in the `.meta.json` (small shape tensors) are used as they are.
    """
    from .. import relay

    path = model_path(model)
    entries = _meta_entries(path)
    shapes = [tuple(e["shape"]) for e in entries]
    # Parse once with distinct 0-d stand-ins, only to find where each constant is used.
    placeholders = [relay.Constant(np.zeros((), dtype=e["dtype"])) for e in entries]
    structure = relay.parse(path.read_text(), source_name=str(path), init_meta_table={"relay.Constant": placeholders})
    roles = constant_roles(structure, placeholders, shapes)
    weights = []
    for entry, shape, role in zip(entries, shapes, roles):
        if "value" in entry:
            data = np.asarray(entry["value"], dtype=entry["dtype"]).reshape(shape)
        else:
            data = _value(role, shape, entry["dtype"], np.random.default_rng([seed, entry["index"]]))
        data.setflags(write=False)
        weights.append(data)
    return weights, roles


def load_model(model: str | os.PathLike, seed: int = 0, weights: list[np.ndarray] | None = None) -> Model:
    """Parse a corpus model with random weights of `seed` (or the given `weights`) bound as its constants."""
    from .. import relay

    path = model_path(model)
    if weights is None:
        weights, roles = random_weights(path, seed)
    else:
        roles = [Role("given")] * len(weights)
    constants = [relay.Constant(w) for w in weights]
    module = relay.parse(path.read_text(), source_name=str(path), init_meta_table={"relay.Constant": constants})
    name = path.name[: -len(".relay")]
    return Model(name, path, module, [c.data for c in constants], roles, seed)


def random_inputs(module, seed: int = 1) -> list[np.ndarray]:
    """Arguments for @main from its parameter types: N(0, 1) floats, small non-negative integers (token ids)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for param in module["main"].params:
        ty = param.type_annotation
        shape = tuple(int(d) for d in ty.shape)
        if np.issubdtype(np.dtype(ty.dtype), np.floating):
            arrays.append(rng.standard_normal(shape).astype(ty.dtype))
        else:
            arrays.append(rng.integers(0, 1000, shape).astype(ty.dtype))
    return arrays
