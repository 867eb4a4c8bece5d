"""Extracts TVM v0.19's Relay test files, relay-aot's test_aot.py and the helper modules they import, from git."""

from __future__ import annotations

import ast
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import PortToolError

__all__ = [
    "TestSource",
    "ExtractedFile",
    "Extraction",
    "DEFAULT_TVM_GIT",
    "DEFAULT_TVM_REF",
    "DEFAULT_AOT_GIT",
    "DEFAULT_AOT_REF",
    "TVM_TEST_FILES",
    "default_sources",
    "select_sources",
    "extract",
    "defined_tests",
]

DEFAULT_TVM_GIT = Path("/work/.mirror/apache+tvm/repo")
DEFAULT_TVM_REF = "refs/tags/v0.19.0"  # a bare `v0.19.0` is ambiguous in the mirror (a branch has that name too)
DEFAULT_AOT_GIT = Path("/work/.mirror/uwsampl+relay-aot/repo/.git")
DEFAULT_AOT_REF = "HEAD"

TVM_TEST_DIRECTORY = "tests/python/relay"
TVM_TEST_FILES = (
    "test_adt.py",
    "test_py_converter.py",
    "test_vm.py",
    "test_any.py",
    "test_op_level1.py",
    "test_op_level2.py",
    "test_op_level3.py",
    "test_op_level4.py",
    "test_ir_parser.py",
    "test_ir_text_printer.py",
    "test_type_infer.py",
    "test_pass_fuse_ops.py",
)
AOT_TEST_PATH = "test/test_aot.py"


@dataclass(frozen=True)
class TestSource:
    """One test file in a git repository, and the subdirectory of the output directory it goes to."""

    __test__ = False  # not a pytest test class, despite the name

    name: str
    repository: str
    git_dir: Path
    ref: str
    path: str
    subdirectory: str
    git_option: str = "--tvm-git"  # the command-line option that names `git_dir`


@dataclass
class ExtractedFile:
    source: TestSource
    path: Path  # the written (rewritten) test file
    helpers: list[str] = field(default_factory=list)  # repository paths of the helper modules written beside it
    defined_tests: int = 0


@dataclass
class Extraction:
    files: list[ExtractedFile] = field(default_factory=list)
    skipped: list[tuple[TestSource, str]] = field(default_factory=list)  # (source, why it was not extracted)


def default_sources(
    tvm_git: Path = DEFAULT_TVM_GIT,
    tvm_ref: str = DEFAULT_TVM_REF,
    aot_git: Path = DEFAULT_AOT_GIT,
    aot_ref: str = DEFAULT_AOT_REF,
) -> list[TestSource]:
    """The issue's files: TVM's Relay tests at `tvm_ref`, then relay-aot's test_aot.py."""
    sources = [
        TestSource(name, "apache/tvm", Path(tvm_git), tvm_ref, f"{TVM_TEST_DIRECTORY}/{name}", "tvm")
        for name in TVM_TEST_FILES
    ]
    sources.append(
        TestSource("test_aot.py", "uwsampl/relay-aot", Path(aot_git), aot_ref, AOT_TEST_PATH, "aot", "--aot-git")
    )
    return sources


def select_sources(names: list[str], sources: list[TestSource]) -> list[TestSource]:
    """The sources named (file names as in `--files`), in the order given."""
    by_name = {source.name: source for source in sources}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise PortToolError(f"unknown test file(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[name] for name in names]


def extract(
    sources: list[TestSource],
    out_dir: Path,
    transform: Callable[[str, bytes], bytes] = lambda path, data: data,
) -> Extraction:
    """Writes each source (and the helper modules it imports from its directory) under `out_dir`.

    `transform(repository_path, data)` is applied to every Python file written. A source whose git
    directory, ref or file is missing is reported in `skipped` with the reason, not raised.
    """
    extraction = Extraction()
    trees: dict[tuple[Path, str, str], set[str]] = {}
    for source in sources:
        reason = _unavailable(source)
        if reason:
            extraction.skipped.append((source, reason))
            continue
        directory = source.path.rpartition("/")[0]
        key = (source.git_dir, source.ref, directory)
        if key not in trees:
            listing = _git(source.git_dir, "ls-tree", "-r", "--name-only", source.ref, "--", f"{directory}/")
            trees[key] = set(listing.decode().splitlines())
        data = _git(source.git_dir, "show", f"{source.ref}:{source.path}")
        contents = {source.path: data}

        def read(repository_path: str, source: TestSource = source) -> bytes:
            if repository_path not in contents:
                contents[repository_path] = _git(source.git_dir, "show", f"{source.ref}:{repository_path}")
            return contents[repository_path]

        helpers = _helper_modules(data, source.path, directory, trees[key], read)
        target_dir = Path(out_dir) / source.subdirectory
        for repository_path in [source.path, *helpers]:
            content = read(repository_path)
            destination = target_dir / repository_path[len(directory) + 1 :]
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(transform(repository_path, content) if repository_path.endswith(".py") else content)
        extraction.files.append(ExtractedFile(source, target_dir / source.name, helpers, defined_tests(data)))
    return extraction


def defined_tests(data: bytes) -> int:
    """How many test functions a file defines (before parametrization): `test_*` functions and `Test*` methods."""
    try:
        tree = ast.parse(data)
    except SyntaxError:
        return 0
    count = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            count += 1
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            count += sum(
                isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name.startswith("test")
                for member in node.body
            )
    return count


def _unavailable(source: TestSource) -> str | None:
    if not source.git_dir.is_dir():
        return f"no git directory at {source.git_dir} (a clone of {source.repository}; pass {source.git_option} DIR)"
    try:
        _git(source.git_dir, "rev-parse", "--verify", "--quiet", f"{source.ref}^{{commit}}")
    except PortToolError:
        return f"{source.ref} is not a commit in {source.git_dir}"
    try:
        _git(source.git_dir, "cat-file", "-e", f"{source.ref}:{source.path}")
    except PortToolError:
        return f"{source.path} does not exist at {source.ref} in {source.git_dir}"
    return None


def _git(git_dir: Path, *arguments: str) -> bytes:
    completed = subprocess.run(["git", f"--git-dir={git_dir}", *arguments], capture_output=True)
    if completed.returncode != 0:
        message = completed.stderr.decode(errors="replace").strip() or f"exit status {completed.returncode}"
        raise PortToolError(f"git {' '.join(arguments)} in {git_dir}: {message}")
    return completed.stdout


def _helper_modules(data: bytes, path: str, directory: str, tree: set[str], read: Callable[[str], bytes]) -> list[str]:
    """Repository paths of the modules `data` imports (directly or through other helpers) from `directory`.

    The test files run with their own directory on `sys.path` (pytest's default import mode), so
    `from utils import ref_funcs` means `<directory>/utils/ref_funcs.py`.
    """
    found: list[str] = []
    pending = [data]
    while pending:
        for candidate in _imported_module_files(pending.pop(), directory):
            if candidate in tree and candidate != path and candidate not in found:
                found.append(candidate)
                pending.append(read(candidate))
    return found


def _imported_module_files(data: bytes, directory: str) -> list[str]:
    """Every file under `directory` that an absolute import in `data` could load (existing or not)."""
    try:
        tree = ast.parse(data)
    except SyntaxError:
        return []
    candidates: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports = [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imports = [(node.module, [alias.name for alias in node.names])]
        else:
            continue
        for module, names in imports:
            parts = module.split(".")
            for length in range(1, len(parts) + 1):
                stem = "/".join([directory, *parts[:length]])
                candidates += [f"{stem}.py", f"{stem}/__init__.py"]
            for name in names:  # `from package import module`
                stem = "/".join([directory, *parts, name])
                candidates += [f"{stem}.py", f"{stem}/__init__.py"]
    return candidates
