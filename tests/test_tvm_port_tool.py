"""The TVM test-file measurement tool (tools/tvm_port): import rewriting, extraction, running and the report."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.tvm_port import PortToolError  # noqa: E402
from tools.tvm_port.__main__ import main  # noqa: E402
from tools.tvm_port.extract import TestSource, default_sources, extract, select_sources  # noqa: E402
from tools.tvm_port.report import failure_causes, normalize_message, render_report  # noqa: E402
from tools.tvm_port.results import results_from_junit  # noqa: E402
from tools.tvm_port.rewrite import Redirect, rewrite_imports  # noqa: E402
from tools.tvm_port.run import run_file  # noqa: E402

# ---------------------------------------------------------------------------------------------------
# Import rewriting


@pytest.mark.parametrize(
    "original, rewritten",
    [
        ("import tvm", "import transpile.tvm_compat as tvm"),
        ("import tvm.testing", "import transpile.tvm_compat.testing, transpile.tvm_compat as tvm"),
        ("from tvm import relay, te", "from transpile.tvm_compat import relay, te"),
        (
            "from tvm.relay.testing import run_infer_type as infer",
            "from transpile.tvm_compat.relay.testing import run_infer_type as infer",
        ),
        ("import tvm.relay as relay", "import transpile.tvm_compat.relay as relay"),
        (
            "import numpy as np, tvm.topi.testing",
            "import numpy as np, transpile.tvm_compat.topi.testing, transpile.tvm_compat as tvm",
        ),
        ("import tvm, tvm.testing", "import transpile.tvm_compat as tvm, transpile.tvm_compat.testing"),
        ("from tvm . relay import var  # spaced", "from transpile.tvm_compat.relay import var  # spaced"),
        ("import aot", "import transpile.tvm_compat.aot as aot"),
        ("import tvmx, tvm_foo", "import tvmx, tvm_foo"),
        ("from tvm_foo import tvm", "from tvm_foo import tvm"),
        ("import numpy as tvm", "import numpy as tvm"),
        ("from . import tvm", "from . import tvm"),
    ],
)
def test_each_import_form_is_redirected_on_its_own_line(original, rewritten):
    assert rewrite_imports(original.encode() + b"\n") == rewritten.encode() + b"\n"


SYNTHETIC_TEST_FILE = '''\
# Licensed to nobody; a file written for these tests, shaped like a TVM test file.
"""Docstring that mentions import tvm and from tvm import relay."""
import numpy as np
import tvm
import tvm.testing
from tvm import relay, te
from tvm.relay.testing import run_infer_type as infer
from tvm.relay import (
    Function,
    var,  # a comment inside the statement
)
import tvm.relay as relay

MESSAGE = "import tvm"  # import tvm in a comment
name = "caf\u00e9"; import tvm.relay.testing


def test_inside_a_function():
    import tvm.topi.testing
    from tvm.relay.prelude import Prelude

    x = 1\t# a tab before the comment
    return Prelude, x
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_every_line_but_the_import_lines_stays_byte_identical(newline):
    source = SYNTHETIC_TEST_FILE.replace("\n", newline).encode()
    rewritten = rewrite_imports(source)
    original_lines, new_lines = source.splitlines(keepends=True), rewritten.splitlines(keepends=True)
    assert len(new_lines) == len(original_lines)  # tracebacks keep their line numbers
    changed = {number for number, (old, new) in enumerate(zip(original_lines, new_lines), 1) if old != new}
    assert changed == {4, 5, 6, 7, 8, 12, 15, 19, 20}
    for number in changed:
        old, new = original_lines[number - 1], new_lines[number - 1]
        assert new.endswith(newline.encode()) and b"tvm_compat" in new
        # only the module names changed: the text before `import`/`from` and after the names is intact
        assert new[: len(old) - len(old.lstrip())] == old[: len(old) - len(old.lstrip())]
    assert new_lines[7] == b"from transpile.tvm_compat.relay import (" + newline.encode()
    assert (
        new_lines[14]
        == 'name = "caf\u00e9"; import transpile.tvm_compat.relay.testing, transpile.tvm_compat as tvm'.encode()
        + newline.encode()
    )
    assert (
        new_lines[18] == b"    import transpile.tvm_compat.topi.testing, transpile.tvm_compat as tvm" + newline.encode()
    )
    ast.parse(rewritten)


def test_redirected_imports_bind_the_names_the_original_bound():
    # `email` stands in for the facade: a package with submodules that exists everywhere.
    redirect = Redirect("tvm", "email")
    source = b"import tvm.mime.text\nfrom tvm.mime import base as b\nimport tvm.utils as u\nimport tvm\n"
    namespace: dict = {}
    exec(compile(rewrite_imports(source, [redirect]), "<rewritten>", "exec"), namespace)
    email = importlib.import_module("email")
    assert namespace["tvm"] is email
    assert namespace["tvm"].mime.text.MIMEText is importlib.import_module("email.mime.text").MIMEText
    assert namespace["b"] is importlib.import_module("email.mime.base")
    assert namespace["u"] is importlib.import_module("email.utils")


def test_a_file_that_does_not_parse_is_a_clear_error():
    with pytest.raises(PortToolError, match=r"broken\.py: cannot rewrite its imports.*line 2"):
        rewrite_imports(b"import tvm\ndef f(:\n", filename="broken.py")


# ---------------------------------------------------------------------------------------------------
# Extraction


def test_extraction_without_the_git_directory_is_skipped_with_the_reason(tmp_path):
    missing = tmp_path / "no-such-mirror"
    extraction = extract(default_sources(tvm_git=missing, aot_git=missing), tmp_path / "out")
    assert extraction.files == []
    assert len(extraction.skipped) == 13
    source, reason = extraction.skipped[0]
    assert source.name == "test_adt.py"
    assert reason == f"no git directory at {missing} (a clone of apache/tvm; pass --tvm-git DIR)"
    assert (
        extraction.skipped[-1][1] == f"no git directory at {missing} (a clone of uwsampl/relay-aot; pass --aot-git DIR)"
    )
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.py"))


def _git(directory: Path, *arguments: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(directory), *arguments],
        check=True,
        capture_output=True,
    )


def test_extraction_takes_the_imported_helper_modules_and_rewrites_every_python_file(tmp_path):
    repository = tmp_path / "repository"
    tests = repository / "tests" / "relay"
    (tests / "utils").mkdir(parents=True)
    (tests / "test_sample.py").write_text(
        "import tvm\nfrom utils import ref_funcs\nfrom helper_a import f\n\ndef test_one():\n    pass\n"
    )
    (tests / "helper_a.py").write_text("from tvm import relay\nimport helper_b\n")
    (tests / "helper_b.py").write_text("X = 1\n")
    (tests / "utils" / "ref_funcs.py").write_text("import numpy as np\n")
    (tests / "utils" / "unused.py").write_text("import tvm\n")
    (tests / "test_other.py").write_text("import tvm\n")
    _git(repository, "init", "-q")
    _git(repository, "add", ".")
    _git(repository, "commit", "-q", "-m", "synthetic")
    source = TestSource(
        "test_sample.py", "example/repo", repository / ".git", "HEAD", "tests/relay/test_sample.py", "tvm"
    )
    out = tmp_path / "out"
    extraction = extract([source], out, lambda path, data: rewrite_imports(data, filename=path))
    assert extraction.skipped == []
    [extracted] = extraction.files
    assert sorted(extracted.helpers) == [
        "tests/relay/helper_a.py",
        "tests/relay/helper_b.py",
        "tests/relay/utils/ref_funcs.py",
    ]
    assert extracted.defined_tests == 1
    written = sorted(str(path.relative_to(out)) for path in out.rglob("*.py"))
    assert written == ["tvm/helper_a.py", "tvm/helper_b.py", "tvm/test_sample.py", "tvm/utils/ref_funcs.py"]
    assert (out / "tvm" / "helper_a.py").read_text() == "from transpile.tvm_compat import relay\nimport helper_b\n"
    assert (
        (out / "tvm" / "test_sample.py").read_text().startswith("import transpile.tvm_compat as tvm\nfrom utils import")
    )


def test_an_unknown_file_name_is_a_clear_error():
    with pytest.raises(PortToolError, match=r"unknown test file\(s\) test_nothing\.py; known: test_adt\.py"):
        select_sources(["test_adt.py", "test_nothing.py"], default_sources())


def test_the_output_directory_is_never_inside_the_repository(capsys):
    repository = Path(__file__).resolve().parent.parent
    assert main(["--out", str(repository / "tvm-port-out"), "--files", "test_adt.py"]) == 2
    assert "inside the repository" in capsys.readouterr().err
    assert not (repository / "tvm-port-out").exists()


# ---------------------------------------------------------------------------------------------------
# The report, from a JUnit XML file shaped like pytest's


FAKE_JUNIT_XML = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="2" failures="5" skipped="2" tests="10">
<testcase classname="test_alpha" name="test_pass"/>
<testcase classname="test_alpha" name="test_shape[1]">
  <failure message="ValueError: shape (1, 2) at 0x7f00aa does not match 3">E   ValueError: ...</failure></testcase>
<testcase classname="test_alpha" name="test_shape[2]">
  <failure message="ValueError: shape (4, 5) at 0x7f00bb does not match 12">E   ValueError: ...</failure></testcase>
<testcase classname="test_alpha.TestGroup" name="test_astext">
  <failure message="AttributeError: 'Call' object has no attribute 'astext'">E   AttributeError</failure></testcase>
<testcase classname="test_alpha" name="test_scope">
  <failure message="AttributeError: module 'transpile.relay' has no attribute 'ScopeBuilder'">E</failure></testcase>
<testcase classname="test_alpha" name="test_assert">
  <failure message="assert 1 == 2">&gt;   assert 1 == 2
E   assert 1 == 2

test_alpha.py:7: AssertionError</failure></testcase>
<testcase classname="test_alpha" name="test_fixture">
  <error message="failed on setup with &quot;RuntimeError: no device 3&quot;">E   RuntimeError: no device 3</error></testcase>
<testcase classname="test_alpha" name="test_gpu"><skipped type="pytest.skip" message="needs cuda">x</skipped></testcase>
<testcase classname="test_alpha" name="test_known"><skipped type="pytest.xfail" message="known bug"/></testcase>
<testcase classname="test_alpha" name="test_more_shape">
  <failure message="ValueError: shape (7, 8) at 0x1 does not match 99">E   ValueError: ...</failure></testcase>
<testcase classname="" name="test_beta"><error message="collection failure">ImportError while importing test module
Traceback:
test_beta.py:1: in &lt;module&gt;
    import transpile.tvm_compat as tvm
E   ModuleNotFoundError: No module named 'transpile.tvm_compat'</error></testcase>
</testsuite></testsuites>
"""


def test_the_report_groups_failures_by_type_and_normalized_message(tmp_path):
    xml = tmp_path / "results.xml"
    xml.write_text(FAKE_JUNIT_XML)
    alpha, beta = results_from_junit(xml)
    assert (alpha.name, beta.name) == ("test_alpha.py", "test_beta.py")
    assert alpha.counts() == {"passed": 1, "failed": 6, "error": 1, "skipped": 1, "xfailed": 1}
    assert alpha.collected == 10
    assert beta.collected == 0 and beta.counts()["error"] == 1
    assert beta.collect_errors[0].exception == "ModuleNotFoundError"

    causes = failure_causes([alpha, beta])
    assert causes[0].count == 3
    assert causes[0].exception == "ValueError"
    assert causes[0].message == "shape (N, N) at 0x… does not match N"
    assert causes[0].example == "test_alpha.py::test_shape[1]"
    by_key = {(cause.exception, cause.message): cause for cause in causes}
    # different missing attributes are different work items: they do not merge
    assert (
        by_key[("AttributeError", "'Call' object has no attribute 'astext'")].example
        == "test_alpha.py::TestGroup::test_astext"
    )
    assert ("AttributeError", "module 'transpile.relay' has no attribute 'ScopeBuilder'") in by_key
    assert ("AssertionError", "assert N == N") in by_key
    assert ("RuntimeError", "no device N") in by_key
    assert (
        by_key[("ModuleNotFoundError", "No module named 'transpile.tvm_compat'")].example == "test_beta.py (collection)"
    )
    assert sum(cause.count for cause in causes) == 8
    assert len(failure_causes([alpha, beta], limit=2)) == 2

    report = render_report([alpha, beta], "interpreter")
    assert "| test_alpha.py | — | 10 | 1 | 6 | 1 | 1 | 1 | 10.0 |" in report
    assert (
        "| test_beta.py | — | 0 | 0 | 0 | 1 | 0 | 0 | — | collection: ModuleNotFoundError: No module named 'transpile.tvm_compat' |"
        in report
    )
    assert "| **total** | 0 | 10 | 1 | 6 | 2 | 1 | 1 | 10.0 | 1 file(s) did not run |" in report
    assert "| 3 | ValueError | shape (N, N) at 0x… does not match N | test_alpha.py::test_shape[1] |" in report


def test_messages_are_normalized_to_their_first_line_without_numbers_or_addresses():
    assert (
        normalize_message("\n\nNot equal to tolerance rtol=1e-07, atol=0\nMismatch: 3 / 3")
        == "Not equal to tolerance rtol=N, atol=N"
    )
    assert (
        normalize_message("Tensor[(3, 4), float32] vs x_12 at 0xdeadBEEF") == "Tensor[(N, N), float32] vs x_12 at 0x…"
    )
    assert normalize_message('got #[version = "0.0.5"] and -2.5e+3') == 'got #[version = "N"] and N'
    assert normalize_message(None) == ""
    assert len(normalize_message("x" * 500)) == 160


# ---------------------------------------------------------------------------------------------------
# Running: one pytest process per attempt, past a test that kills the process


def test_a_run_records_each_outcome_and_continues_past_a_crashing_test(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_synthetic.py").write_text(textwrap.dedent("""\
            import os, signal, time
            import pytest

            def test_passes():
                assert os.environ["TRANSPILE_TVM_BACKEND"] == "python"

            def test_fails():
                raise TypeError("bad operand 3")

            def test_crashes():
                os.kill(os.getpid(), signal.SIGSEGV)

            def test_slow():
                time.sleep(30)

            @pytest.mark.skip(reason="not here")
            def test_skipped():
                pass

            @pytest.mark.xfail(reason="known")
            def test_known():
                raise ValueError("x")
            """))
    result = run_file(tmp_path / "test_synthetic.py", "python", 1.0, tmp_path, plugins=())
    outcomes = {test.nodeid.split("::")[1]: (test.outcome, test.exception, test.message) for test in result.tests}
    assert outcomes == {
        "test_passes": ("passed", None, None),
        "test_fails": ("failed", "TypeError", "bad operand 3"),
        "test_crashes": ("failed", "Crash", "the test process was killed by SIGSEGV"),
        "test_slow": ("failed", "tools.tvm_port.pytest_plugin.TestTimeout", "over the per-test timeout of 1 s"),
        "test_skipped": ("skipped", None, "not here"),
        "test_known": ("xfailed", None, "known"),
    }
    assert result.note is None and result.collect_errors == []


def test_a_file_that_does_not_import_fails_as_a_whole_with_the_reason(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_unimportable.py").write_text(
        "import transpile.no_such_facade as tvm\n\ndef test_x():\n    pass\n"
    )
    result = run_file(tmp_path / "test_unimportable.py", "interpreter", 10.0, tmp_path, plugins=())
    assert result.tests == []
    [error] = result.collect_errors
    assert (error.exception, error.message) == ("ModuleNotFoundError", "No module named 'transpile.no_such_facade'")
    assert result.counts()["error"] == 1
