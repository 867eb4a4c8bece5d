"""The conformance suite as pytest tests: every case on every selected backend (see plugin.py)."""

from __future__ import annotations

import pytest

from transpile.testing.cases import ALL_CASES
from transpile.testing.runner import run_case, selected_backends


def pytest_generate_tests(metafunc):
    if "conformance_case" in metafunc.fixturenames:
        params = [
            pytest.param(backend, case, id=f"{backend}-{case.theme}-{case.name}")
            for backend in selected_backends(metafunc.config)
            for case in ALL_CASES
        ]
        metafunc.parametrize(("backend_name", "conformance_case"), params)


def test_conformance(backend_name, conformance_case):
    run_case(backend_name, conformance_case)
