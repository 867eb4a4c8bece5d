"""Shared test fixtures: the location of the real-world Relay corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("TRANSPILE_CORPUS", REPO.parent / "shared" / "corpus" / "relay"))


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not (CORPUS / "MANIFEST.json").exists():
        pytest.skip(f"the Relay corpus is not at {CORPUS} (set TRANSPILE_CORPUS)")
    return CORPUS
