"""The backend plugin contract: Backend (emit/build), Artifact (load/export) and the feature vocabulary.

A backend is a class registered under the entry-point group `transpile.backends`
(`name = package.module:Class`). The framework instantiates it with no arguments, checks the
program's features against `capabilities`, runs the shared pipeline and hands the result to
`emit` (source text) or `build` (an Artifact).

Exported artifacts are directories holding the backend's files plus a manifest,
`transpile-artifact.json`:

    {"format": "transpile-artifact", "format_version": 1,
     "backend": "<backend name>", "api_version": 1, "entry": "<entry function>",
     "transpile_version": "<version>", "data": {...backend-specific, e.g. file names...}}

`transpile.load(path)` reads the manifest, selects the named backend and calls its
`load_artifact(directory, manifest)`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from ..errors import TranspileError

__all__ = [
    "Backend",
    "Artifact",
    "API_VERSION",
    "CONSUMES_LIR",
    "CONSUMES_RELAY",
    "CLOSURES",
    "ADTS",
    "REFS",
    "POLYMORPHISM",
    "RECURSION",
    "NON_TAIL_RECURSION",
    "DYNAMIC_SHAPES",
    "ALL_FEATURES",
    "FEATURE_ORDER",
    "FEATURE_DESCRIPTIONS",
    "MANIFEST_NAME",
    "MANIFEST_FORMAT",
    "MANIFEST_FORMAT_VERSION",
    "read_manifest",
]

API_VERSION = 1

# What a backend's emit/build receive.
CONSUMES_LIR = "lir"  # the little IR produced by the shared normalization pipeline
CONSUMES_RELAY = "relay"  # the type-checked Relay IRModule itself (the interpreter backend)

# ----- the feature vocabulary --------------------------------------------------------------
CLOSURES = "closures"
ADTS = "adts"
REFS = "refs"
POLYMORPHISM = "polymorphism"
RECURSION = "recursion"
NON_TAIL_RECURSION = "non_tail_recursion"
DYNAMIC_SHAPES = "dynamic_shapes"

FEATURE_ORDER = (CLOSURES, ADTS, REFS, POLYMORPHISM, RECURSION, NON_TAIL_RECURSION, DYNAMIC_SHAPES)
ALL_FEATURES = frozenset(FEATURE_ORDER)

FEATURE_DESCRIPTIONS = {
    CLOSURES: "first-class functions: a local `fn` expression, a global function or constructor used as a value, "
    "or a function-typed parameter of the entry function",
    ADTS: "algebraic data types: constructors, `match`, or ADT-typed values",
    REFS: "mutable references: ref, ref_read, ref_write or reference-typed values",
    POLYMORPHISM: "polymorphic functions (type parameters) on the reachable call graph",
    RECURSION: "a function that calls itself, directly or through other functions (global or let-bound)",
    NON_TAIL_RECURSION: "a recursive call that is not in tail position (it needs a call stack, not a loop)",
    DYNAMIC_SHAPES: "tensor dimensions unknown until run time (`?` / relay.Any())",
}

MANIFEST_NAME = "transpile-artifact.json"
MANIFEST_FORMAT = "transpile-artifact"
MANIFEST_FORMAT_VERSION = 1


class Backend:
    """Base class of code generators. Subclasses set the class attributes and implement emit/build.

    - `name`: the name users select it by (must equal its entry-point name).
    - `api_version`: the version of this contract the backend implements (currently 1).
    - `capabilities`: the features (see FEATURE_ORDER) it handles; a program needing another
      one is rejected with UnsupportedFeatureError before the backend runs.
    - `consumes`: "lir" (default) or "relay".
    - `pipeline_options`: knobs of the shared pipeline the backend asks for (fields of
      transpile.pipeline.PipelineOptions, e.g. {"fuse": False}); users may pass the same names
      as options of compile/emit/build, which then go to the pipeline, not to the backend.

    Backends with a build cache (the native ones) also implement `cached_build(key)`: the
    framework computes `key` from the typed Relay module before lowering (see
    transpile.backends.buildkey), asks `cached_build(key)` first and, on a miss, passes
    `source_key=key` to `build` so the result is stored under it. A hit then costs no lowering
    and no code generation.
    """

    name: str = ""
    api_version: int = API_VERSION
    capabilities: frozenset = frozenset()
    consumes: str = CONSUMES_LIR
    pipeline_options: dict = {}
    description: str = ""

    def emit(self, program, **options) -> str:
        """The generated source of `program` as text."""
        raise NotImplementedError(f"backend {self.name!r} does not implement emit")

    def build(self, program, **options) -> "Artifact":
        """Compile `program` into an Artifact."""
        raise NotImplementedError(f"backend {self.name!r} does not implement build")

    def cached_build(self, key: str) -> "Artifact | None":
        """The artifact built earlier under the source key `key`, or None (default: no cache)."""
        return None

    def load_artifact(self, directory: Path, manifest: dict) -> "Artifact":
        """Re-create an Artifact this backend exported to `directory` (see the module docstring)."""
        raise TranspileError(f"backend '{self.name}' cannot load exported artifacts")

    def supports(self, feature: str) -> bool:
        return feature in self.capabilities

    def __repr__(self) -> str:
        return f"<{type(self).__name__} backend {self.name!r}>"


class Artifact:
    """A built program. `load()` gives a Python callable running the entry function; `export(path)`
    writes it to a directory that `transpile.load(path)` reads back.

    Subclasses implement `load` and `write_files`.
    """

    def __init__(self, backend: str, entry: str):
        self.backend = backend
        self.entry = entry

    def load(self) -> Callable[..., Any]:
        raise NotImplementedError

    def write_files(self, directory: Path) -> dict:
        """Write the backend's files into `directory`; return the manifest's backend-specific `data`."""
        raise TranspileError(f"backend '{self.backend}' cannot export artifacts")

    def export(self, path) -> Path:
        """Write the artifact into the directory `path` (created if needed); returns that directory."""
        from .. import __version__

        directory = Path(path)
        if directory.exists() and not directory.is_dir():
            raise TranspileError(f"cannot export to {directory}: it exists and is not a directory")
        directory.mkdir(parents=True, exist_ok=True)
        data = self.write_files(directory)
        manifest = {
            "format": MANIFEST_FORMAT,
            "format_version": MANIFEST_FORMAT_VERSION,
            "backend": self.backend,
            "api_version": API_VERSION,
            "entry": self.entry,
            "transpile_version": __version__,
            "data": data or {},
        }
        (directory / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return directory

    def __repr__(self) -> str:
        return f"<{type(self).__name__} backend={self.backend!r} entry={self.entry!r}>"


def read_manifest(path) -> tuple[Path, dict]:
    """(artifact directory, manifest) for an exported artifact directory or its manifest file."""
    path = Path(path)
    manifest_path = path / MANIFEST_NAME if path.is_dir() else path
    if not manifest_path.is_file():
        raise TranspileError(f"{path} is not an exported transpile artifact (no {MANIFEST_NAME})")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TranspileError(f"cannot read the artifact manifest {manifest_path}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise TranspileError(f"{manifest_path} is not a transpile artifact manifest")
    if manifest.get("format_version") != MANIFEST_FORMAT_VERSION:
        raise TranspileError(
            f"{manifest_path} has manifest format version {manifest.get('format_version')!r};"
            f" this transpile reads version {MANIFEST_FORMAT_VERSION}"
        )
    for key in ("backend", "entry"):
        if not isinstance(manifest.get(key), str):
            raise TranspileError(f"{manifest_path} has no {key!r} entry")
    return manifest_path.parent, manifest
