"""pytest plugin (entry point `pytest11`): the --transpile-backend option of the conformance suite.

Run the suite on a backend with:

    pytest --pyargs transpile.testing --transpile-backend NAME

NAME is an installed backend name, or `package.module:Class` to test a Backend class that is not
installed. Without the option, the suite runs on every installed backend. If transpile's
`pytest11` entry point is unavailable, add `-p transpile.testing.plugin` to the command.
"""

from __future__ import annotations

__all__ = ["pytest_addoption"]


def pytest_addoption(parser):
    group = parser.getgroup("transpile", "transpile conformance suite")
    group.addoption(
        "--transpile-backend",
        action="append",
        default=[],
        dest="transpile_backend",
        metavar="NAME",
        help="backend to run the transpile conformance suite on (repeatable; NAME or module:Class; default: all)",
    )
