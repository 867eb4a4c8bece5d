"""The CLI's `cache info` / `cache clear` and the progress options `--quiet` / `--verbose` of build, run and emit."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from transpile import progress
from transpile.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
QUICKSTART = str(EXAMPLES / "quickstart.rly")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(root))
    monkeypatch.delenv("TRANSPILE_CACHE_MAX", raising=False)
    return root


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def make_entry(root: Path, folder: str, key: str, size: int = 1000) -> Path:
    entry = root / folder / key
    entry.mkdir(parents=True)
    (entry / "libmain.so").write_bytes(b"x" * size)
    (entry / "info.json").write_text("{}")
    return entry


def test_cache_info_empty(cache_dir, capsys):
    code, out, err = run_cli(capsys, "cache", "info")
    assert code == 0, err
    assert f"cache: {cache_dir} (TRANSPILE_CACHE_DIR)" in out
    assert "(empty)" in out
    assert "limit: 5.0 GiB (default; set TRANSPILE_CACHE_MAX)" in out


def test_cache_info_lists_backends(cache_dir, capsys, monkeypatch):
    make_entry(cache_dir, "cpp", "a" * 32, size=2048)
    make_entry(cache_dir, "cpp", "b" * 32)
    make_entry(cache_dir, "tir", "c" * 32)
    monkeypatch.setenv("TRANSPILE_CACHE_MAX", "500M")
    code, out, err = run_cli(capsys, "cache", "info")
    assert code == 0, err
    lines = out.splitlines()
    cpp = next(line for line in lines if line.split()[0] == "cpp")
    assert cpp.split()[1:3] == ["2", "entries"]
    tir = next(line for line in lines if line.split()[0] == "tir")
    assert tir.split()[1:3] == ["1", "entry"]
    assert "in 3 entries; limit: 500.0 MiB (TRANSPILE_CACHE_MAX=500M)" in out


def test_cache_info_bad_limit(cache_dir, capsys, monkeypatch):
    monkeypatch.setenv("TRANSPILE_CACHE_MAX", "lots")
    code, out, err = run_cli(capsys, "cache", "info")
    assert code == 1 and "TRANSPILE_CACHE_MAX='lots'" in err


def test_cache_clear(cache_dir, capsys):
    make_entry(cache_dir, "cpp", "a" * 32)
    make_entry(cache_dir, "tir", "b" * 32)
    make_entry(cache_dir, "tir", "c" * 32)
    code, out, err = run_cli(capsys, "cache", "clear", "--backend", "tir")
    assert code == 0, err
    assert out.strip() == f"removed 2 entries from {cache_dir}/tir"
    assert (cache_dir / "cpp" / ("a" * 32)).is_dir()
    code, out, err = run_cli(capsys, "cache", "clear")
    assert code == 0 and out.strip() == f"removed 1 entry from {cache_dir}"
    code, out, _ = run_cli(capsys, "cache", "info")
    assert "in 0 entries" in out


def test_cache_clear_unknown_backend(cache_dir, capsys):
    make_entry(cache_dir, "cpp", "a" * 32)
    code, out, err = run_cli(capsys, "cache", "clear", "--backend", "cp")
    assert code == 1 and "no cache folder 'cp'" in err


def test_cache_needs_an_action(capsys):
    with pytest.raises(SystemExit):
        main(["cache"])


@pytest.mark.parametrize("command", ["build", "run", "emit"])
def test_progress_options_are_accepted(command):
    from transpile.cli import build_parser

    extra = ["-o", "out"] if command == "build" else []
    backend = ["-b", "python"] if command != "run" else []
    opts = build_parser().parse_args([command, QUICKSTART, *backend, *extra, "--verbose"])
    assert opts.verbose and not opts.quiet
    opts = build_parser().parse_args([command, QUICKSTART, *backend, *extra, "-q"])
    assert opts.quiet
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, QUICKSTART, *backend, *extra, "-q", "-v"])


def test_default_progress_on_a_pipe_is_silent(cache_dir, capsys):
    code, out, err = run_cli(capsys, "run", "-b", "cpp", QUICKSTART, "10", "[1.0, 2.0, 3.0, 4.0]")
    assert code == 0, err
    assert out.strip() == "(385, 25.0)" and err == ""


def test_verbose_prints_stage_times_on_stderr(cache_dir, capsys):
    progress.reset()
    code, out, err = run_cli(capsys, "run", "-b", "cpp", "--verbose", QUICKSTART, "10", "[1.0, 2.0, 3.0, 4.0]")
    assert code == 0, err
    assert out.strip() == "(385, 25.0)"  # results stay alone on stdout
    assert "stage times:" in err
    names = {name.split("/")[0] for name, _ in progress.stage_times()}
    for name in names:
        assert name in err  # every stage the build ran appears on stderr


def test_quiet_prints_nothing_on_stderr(cache_dir, capsys, tmp_path):
    code, out, err = run_cli(capsys, "build", "-b", "cpp", "--quiet", QUICKSTART, "-o", str(tmp_path / "art"))
    assert code == 0, err
    assert err == "" and "built" in out


def test_live_progress_on_a_terminal(cache_dir, tmp_path):
    """Through a real pseudo-terminal: the live line appears on stderr and is cleared at the end."""
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    env = dict(os.environ, TRANSPILE_CACHE_DIR=str(cache_dir))
    proc = subprocess.Popen(
        [sys.executable, "-m", "transpile", "run", "-b", "cpp", QUICKSTART, "10", "[1.0, 2.0, 3.0, 4.0]"],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    chunks = []
    deadline = time.time() + 600
    while time.time() < deadline:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    out, _ = proc.communicate(timeout=60)
    err = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, err
    assert out.decode().strip() == "(385, 25.0)"
    assert "\r\x1b[K" in err and err.endswith("\r\x1b[K")  # redrawn in place, cleared at the end
    assert "stage times" not in err
