"""Several generated programs as one module (globals renamed per case, one `@main` returning a tuple of
every case's result): a native backend then builds once for the whole batch."""

from __future__ import annotations

from .generator import HEADER, PRELUDE_NAMES, GeneratedProgram

__all__ = ["parse_program", "batch_text", "case_prefix", "split_results"]


def parse_program(text: str, uses_prelude: bool | None = None, source_name: str = "fuzz"):
    """The type-checked module of a program's text (with the Prelude when it mentions List, Option...)."""
    from ...relay import IRModule, Prelude, parse
    from ...relay.transform import InferType

    if uses_prelude is None:
        uses_prelude = bool(PRELUDE_NAMES.search(text))
    init = None
    if uses_prelude:
        init = IRModule()
        Prelude(init)
    return InferType()(parse(text, source_name=source_name, init_module=init))


def case_prefix(index: int) -> str:
    return f"case{index}_"


def batch_text(programs: list[GeneratedProgram]) -> str:
    """One module running every program: `@main` takes all their arguments, returns all their results."""
    parts = [HEADER]
    params, calls = [], []
    for i, program in enumerate(programs):
        prefix = case_prefix(i)
        parts.append(program.renamed(prefix).strip())
        names = [f"%{prefix}{j}" for j in range(len(program.param_types))]
        params += [f"{name}: {t.text()}" for name, t in zip(names, program.param_types)]
        calls.append(f"@{prefix}main({', '.join(names)})")
    results = f"({calls[0]},)" if len(calls) == 1 else f"({', '.join(calls)})"
    parts.append(f"def @main({', '.join(params)}) {{\n  {results}\n}}")
    return "\n\n".join(parts) + "\n"


def batch_arguments(programs: list[GeneratedProgram]) -> list:
    return [value for program in programs for value in program.inputs]


def split_results(result, count: int) -> list:
    if not isinstance(result, tuple) or len(result) != count:
        raise AssertionError(f"a batch of {count} returned {type(result).__name__} instead of a {count}-tuple")
    return list(result)
