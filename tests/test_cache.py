"""transpile.cache: size limits, info, clear, touch, LRU eviction, and builds/loads/evictions from several processes at once.

Every test works in a private TRANSPILE_CACHE_DIR: the real ~/.cache/transpile is never touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from transpile import TranspileError, cache

REPO = Path(__file__).resolve().parent.parent
HOUR = 3600


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(root))
    monkeypatch.delenv("TRANSPILE_CACHE_MAX", raising=False)
    return root


def make_entry(root: Path, folder: str, key: str, size: int = 100, age: float = 2 * HOUR) -> Path:
    """A finished entry of `size` bytes (library + info.json) last used `age` seconds ago."""
    entry = root / folder / key
    entry.mkdir(parents=True)
    (entry / "libmain.so").write_bytes(b"x" * (size - 2))
    (entry / "info.json").write_text("{}")
    used = time.time() - age
    os.utime(entry, (used, used))
    return entry


# --- limits ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, size",
    [
        ("123456", 123456),
        ("500M", 500 * 2**20),
        ("4G", 4 * 2**30),
        ("4g", 4 * 2**30),
        ("1.5GiB", int(1.5 * 2**30)),
        ("64 KB", 64 * 2**10),
        ("2T", 2 * 2**40),
        ("0", None),
        ("none", None),
        ("Unlimited", None),
    ],
)
def test_parse_size(text, size):
    assert cache.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "4X", "-1G", "1e9", "G"])
def test_bad_size_names_the_variable(text):
    with pytest.raises(cache.CacheError, match="TRANSPILE_CACHE_MAX") as info:
        cache.parse_size(text)
    assert isinstance(info.value, TranspileError)


def test_max_size_from_the_environment(monkeypatch):
    monkeypatch.delenv("TRANSPILE_CACHE_MAX", raising=False)
    assert cache.max_size() == cache.DEFAULT_MAX_BYTES == 5 * 2**30
    monkeypatch.setenv("TRANSPILE_CACHE_MAX", "200M")
    assert cache.max_size() == 200 * 2**20
    monkeypatch.setenv("TRANSPILE_CACHE_MAX", "none")
    assert cache.max_size() is None
    monkeypatch.setenv("TRANSPILE_CACHE_MAX", "big")
    with pytest.raises(cache.CacheError, match="TRANSPILE_CACHE_MAX='big'"):
        cache.evict()


def test_format_size():
    assert cache.format_size(512) == "512 B"
    assert cache.format_size(1536) == "1.5 KiB"
    assert cache.format_size(5 * 2**30) == "5.0 GiB"


# --- info, clear, touch --------------------------------------------------------------------------


def test_root_is_the_private_directory(cache_dir):
    assert cache.root() == cache_dir


def test_info(cache_dir, monkeypatch):
    assert cache.info().entries == 0 and cache.info().total_size == 0  # no directory yet
    make_entry(cache_dir, "cpp", "a" * 32, size=100)
    make_entry(cache_dir, "cpp", "b" * 32, size=300)
    make_entry(cache_dir, "tir", "c" * 32, size=50)
    (cache_dir / "tir" / "shim-0123.o").write_bytes(b"s" * 10)
    (cache_dir / "tir" / (".%s-tmp1" % ("d" * 32))).mkdir()  # a build in progress
    (cache_dir / "tir" / (".%s-tmp1" % ("d" * 32)) / "main.cpp").write_bytes(b"t" * 7)
    monkeypatch.setenv("TRANSPILE_CACHE_MAX", "1G")
    found = cache.info()
    assert found.root == cache_dir
    assert (found.folders["cpp"].entries, found.folders["cpp"].size) == (2, 400)
    assert (found.folders["tir"].entries, found.folders["tir"].size, found.folders["tir"].other_size) == (1, 50, 17)
    assert found.entries == 3 and found.total_size == 467 and found.limit == 2**30
    text = found.format()
    assert str(cache_dir) in text and "cpp" in text and "2 entries" in text and "1 entry" in text
    assert "limit: 1.0 GiB (TRANSPILE_CACHE_MAX=1G)" in text


def test_clear_all_and_one_backend(cache_dir):
    make_entry(cache_dir, "cpp", "a" * 32)
    make_entry(cache_dir, "cpp", "b" * 32)
    tir_entry = make_entry(cache_dir, "tir", "c" * 32)
    (cache_dir / "tir" / "shim-1.o").write_bytes(b"s")
    assert cache.clear(backend="cpp") == 2
    assert not any((cache_dir / "cpp").iterdir())
    assert tir_entry.is_dir()
    in_progress = cache_dir / "tir" / ".eeee-build"
    in_progress.mkdir()
    assert cache.clear() == 1
    assert not tir_entry.exists() and not (cache_dir / "tir" / "shim-1.o").exists()
    assert in_progress.is_dir()  # a running build keeps its temp dir
    assert not [p for p in (cache_dir / "tir").iterdir() if p.name.startswith(".trash-")]


def test_clear_unknown_backend(cache_dir):
    make_entry(cache_dir, "cpp", "a" * 32)
    with pytest.raises(cache.CacheError, match="no cache folder 'cp'"):
        cache.clear(backend="cp")
    with pytest.raises(cache.CacheError):
        cache.clear(backend="../elsewhere")
    assert cache.clear(backend="tir") == 0  # a known backend with nothing cached yet


def test_touch_marks_used(cache_dir):
    entry = make_entry(cache_dir, "cpp", "a" * 32, age=HOUR)
    assert cache.touch(entry) is True
    assert time.time() - entry.stat().st_mtime < 60
    assert cache.touch(cache_dir / "cpp" / ("f" * 32)) is False  # gone: the caller rebuilds
    assert cache.touch(cache_dir / "nowhere" / "x") is False


def test_touch_is_cheap(cache_dir):
    entry = make_entry(cache_dir, "cpp", "a" * 32)
    start = time.perf_counter()
    for _ in range(200):
        cache.touch(entry)
    assert (time.perf_counter() - start) / 200 < 2e-3  # ~10 us here


# --- eviction ------------------------------------------------------------------------------------


def test_evict_removes_least_recently_used_first(cache_dir):
    oldest = make_entry(cache_dir, "cpp", "a" * 32, size=100, age=5 * HOUR)
    old = make_entry(cache_dir, "tir", "b" * 32, size=100, age=4 * HOUR)
    newer = make_entry(cache_dir, "cpp", "c" * 32, size=100, age=3 * HOUR)
    newest = make_entry(cache_dir, "tir", "d" * 32, size=100, age=2 * HOUR)
    cache.touch(oldest)  # used again: now the most recent
    removed = cache.evict(limit=250)
    assert removed == [old, newer]
    assert oldest.is_dir() and newest.is_dir() and not old.exists() and not newer.exists()
    assert cache.info().total_size == 200
    assert cache.evict(limit=250) == []  # under the limit: nothing to do


def test_evict_limit_from_environment(cache_dir, monkeypatch):
    for i in range(5):
        make_entry(cache_dir, "cpp", f"{i}" * 32, size=1000, age=HOUR + i)
    monkeypatch.setenv("TRANSPILE_CACHE_MAX", "3000")
    assert len(cache.evict()) == 2
    monkeypatch.setenv("TRANSPILE_CACHE_MAX", "0")  # unlimited
    assert cache.evict() == [] and cache.info().entries == 3


def test_evict_never_removes_keep_or_recently_used(cache_dir):
    kept = make_entry(cache_dir, "cpp", "a" * 32, size=1000, age=5 * HOUR)
    recent = make_entry(cache_dir, "cpp", "b" * 32, size=1000, age=60)
    old = make_entry(cache_dir, "cpp", "c" * 32, size=1000, age=2 * HOUR)
    assert cache.evict(keep=[kept], limit=1) == [old]
    assert kept.is_dir() and recent.is_dir()
    assert cache.evict(keep=[str(kept)], limit=1, min_age=0) == [recent]
    assert kept.is_dir()


def test_evict_sweeps_dead_builds_and_trash_but_not_running_builds(cache_dir):
    make_entry(cache_dir, "cpp", "a" * 32)
    dead = cache_dir / "cpp" / (".%s-dead" % ("b" * 32))
    running = cache_dir / "cpp" / (".%s-live" % ("c" * 32))
    trash = cache_dir / "tir" / ".trash-xyz"
    for path in (dead, running, trash):
        path.mkdir(parents=True)
        (path / "main.cpp").write_text("int x;")
    long_ago = time.time() - 2 * HOUR
    os.utime(dead, (long_ago, long_ago))
    assert cache.evict(limit=None) == []
    assert not dead.exists() and not trash.exists() and running.is_dir()


def test_eviction_renames_before_deleting(cache_dir, monkeypatch):
    """No reader ever finds a half-deleted entry at its place: it leaves in one rename first."""
    entries = [make_entry(cache_dir, "cpp", f"{i}" * 32, age=HOUR + i) for i in range(3)]
    deleted = []
    real_delete = cache._delete

    def checked_delete(path):
        assert path.name.startswith(".trash-")
        assert (path / "info.json").is_file() and (path / "libmain.so").is_file()  # whole until now
        original = path.with_name(path.name[len(".trash-") :].rsplit("-", 1)[0])
        assert original in entries and not original.exists()  # gone from its place before any file goes
        deleted.append(path)
        real_delete(path)

    monkeypatch.setattr(cache, "_delete", checked_delete)
    assert len(cache.evict(limit=1)) == 3
    assert len(deleted) == 3 and all(not e.exists() for e in entries)


def test_only_one_evictor_at_a_time(cache_dir):
    import fcntl

    make_entry(cache_dir, "cpp", "a" * 32)
    with open(cache_dir / ".evict.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert cache.evict(limit=1) == []  # returns at once: the other evictor does the job
    assert len(cache.evict(limit=1)) == 1


def test_evict_waits_for_a_touch_in_progress(cache_dir):
    """An entry touched while the evictor decides is spared: touch holds the shared lock."""
    import fcntl
    import threading

    entry = make_entry(cache_dir, "cpp", "a" * 32, age=HOUR)
    result = []
    with open(cache_dir / ".lock", "a+") as toucher:
        fcntl.flock(toucher, fcntl.LOCK_SH)  # a touch in progress...
        thread = threading.Thread(target=lambda: result.append(cache.evict(limit=1)))
        thread.start()
        time.sleep(0.3)
        assert thread.is_alive()  # ...holds the evictor before its decision
        os.utime(entry)  # the touch completes
    thread.join(10)
    assert result == [[]] and entry.is_dir()


# --- several processes ---------------------------------------------------------------------------

PROGRAM = """
import json, os, sys, time
from pathlib import Path

import numpy as np
import tvm  # noqa: F401  (imported before the start signal so the builds start together)

import transpile
from transpile import relay


def program():
    x = relay.var("x", shape=(4, 8), dtype="float32")
    w = relay.const(np.arange(64, dtype="float32").reshape(8, 8) / 10)
    b = relay.const(np.linspace(-1, 1, 8).astype("float32"))
    return relay.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.nn.dense(x, w, units=8) + b)))


def wait_for_go(sync: Path, name: str) -> None:
    (sync / f"ready-{name}").touch()
    deadline = time.time() + 300
    while not (sync / "go").exists():
        if time.time() > deadline:
            sys.exit("no start signal")
        time.sleep(0.002)


def compile_count(backend):
    import importlib

    return importlib.import_module(f"transpile.backends.{backend}.build").compile_count
"""

BUILD_CHILD = PROGRAM + """
backend, sync, name = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
mod = program()
wait_for_go(sync, name)
f = transpile.compile(mod, backend=backend)
out = f(np.ones((4, 8), "float32"))
print(json.dumps({"result": out.tolist(), "built": compile_count(backend) > 0}))
"""

LOAD_CHILD = PROGRAM + """
import random

from transpile.backends import native

sync, rounds = Path(sys.argv[1]), int(sys.argv[2])
mod = program()
expected = np.maximum(np.ones((4, 8), "float32") @ (np.arange(64, dtype="float32").reshape(8, 8) / 10).T
                      + np.linspace(-1, 1, 8).astype("float32"), 0)
folder = Path(os.environ["TRANSPILE_CACHE_DIR"]) / "cpp"
transpile.compile(mod, backend="cpp")  # built once before the evictor starts
wait_for_go(sync, "loader")
builds = 0


def entries():
    return [e for e in folder.iterdir() if not e.name.startswith((".", "junk"))]


for i in range(rounds):
    kind = i % 3  # 0: a plain hit; 1: races the evictor; 2: evicted for sure, then rebuilt
    if kind:
        # Make the entry the evictor's first choice (used two hours ago).
        for entry in entries():
            os.utime(entry, (time.time() - 7200,) * 2)
        if kind == 1:
            time.sleep(random.uniform(0, 0.03))  # the evictor may take it before our touch, or not
        else:
            deadline = time.time() + 60
            while entries() and time.time() < deadline:
                time.sleep(0.005)
            assert not entries(), "the evictor never took the aged entry"
    native._loaded.clear()  # load from disk again
    before = compile_count("cpp")
    f = transpile.compile(mod, backend="cpp")
    builds += compile_count("cpp") > before
    assert np.allclose(f(np.ones((4, 8), "float32")), expected), i
(sync / "loader-done").touch()
print(json.dumps({"rounds": rounds, "rebuilds": builds}))
"""

EVICT_CHILD = """
import json, os, sys, time
from pathlib import Path
from transpile import cache

sync = Path(sys.argv[1])
(sync / "ready-evictor").touch()
while not (sync / "go").exists():
    time.sleep(0.002)
folder = Path(os.environ["TRANSPILE_CACHE_DIR"]) / "cpp"
removed, junk, real = 0, 0, 0
while not (sync / "loader-done").exists():
    entry = folder / f"junk{junk:06d}"
    entry.mkdir()
    (entry / "info.json").write_text("{}")
    os.utime(entry, (time.time() - 7200,) * 2)
    junk += 1
    gone = cache.evict(limit=1)
    removed += len(gone)
    real += sum(not p.name.startswith("junk") for p in gone)
    time.sleep(0.005)
print(json.dumps({"removed": removed, "junk": junk, "real": real}))
"""


def _child_env(cache_dir: Path) -> dict:
    env = dict(os.environ, TRANSPILE_CACHE_DIR=str(cache_dir), TVM_NUM_THREADS="1")
    env.pop("TRANSPILE_CACHE_MAX", None)
    return env


def _start_together(procs, sync: Path, names, timeout=300):
    deadline = time.time() + timeout
    while not all((sync / f"ready-{n}").exists() for n in names):
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"a child exited early: {proc.communicate()}")
        if time.time() > deadline:
            raise AssertionError("children not ready")
        time.sleep(0.01)
    (sync / "go").touch()


def _finish(procs, timeout=600):
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"exit {proc.returncode}:\n{err[-3000:]}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _expected():
    w = np.arange(64, dtype="float32").reshape(8, 8) / 10
    b = np.linspace(-1, 1, 8).astype("float32")
    return np.maximum(np.ones((4, 8), "float32") @ w.T + b, 0)


@pytest.mark.parametrize("backend", ["cpp", "tir"])
def test_concurrent_builds_of_the_same_key(tmp_path, backend):
    cache_dir, sync = tmp_path / "cache", tmp_path / "sync"
    sync.mkdir()
    script = tmp_path / "child.py"
    script.write_text(BUILD_CHILD)
    names = ["0", "1", "2"]
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), backend, str(sync), name],
            env=_child_env(cache_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for name in names
    ]
    try:
        _start_together(procs, sync, names)
        results = _finish(procs)
    finally:
        for proc in procs:
            proc.kill()
    for result in results:
        np.testing.assert_allclose(np.array(result["result"], "float32"), _expected(), rtol=1e-6)
    assert any(r["built"] for r in results)
    folder = cache_dir / backend
    entries = [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(entries) == 1 and (entries[0] / "info.json").is_file()
    assert not [p for p in folder.iterdir() if p.name.startswith(".")], "temp dirs left behind"


def test_eviction_while_another_process_loads(tmp_path):
    cache_dir, sync = tmp_path / "cache", tmp_path / "sync"
    sync.mkdir()
    (tmp_path / "loader.py").write_text(LOAD_CHILD)
    (tmp_path / "evictor.py").write_text(EVICT_CHILD)
    pipes = dict(env=_child_env(cache_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    loader = subprocess.Popen([sys.executable, str(tmp_path / "loader.py"), str(sync), "6"], **pipes)
    evictor = subprocess.Popen([sys.executable, str(tmp_path / "evictor.py"), str(sync)], **pipes)
    try:
        _start_together([loader, evictor], sync, ["loader", "evictor"])
        loaded, evicted = _finish([loader, evictor])
    finally:
        loader.kill()
        evictor.kill()
    assert loaded["rounds"] == 6
    # The evictor took the loader's aged library at least in the two "evicted for sure" rounds,
    # and each time the loader rebuilt it and ran it correctly.
    assert evicted["real"] >= 2 and loaded["rebuilds"] >= 2, (loaded, evicted)
    assert evicted["removed"] >= evicted["junk"] - 1  # junk from all along was evicted too
    print(loaded, evicted)
    leftovers = [p.name for p in (cache_dir / "cpp").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_a_loaded_library_survives_clearing_the_cache(cache_dir):
    import transpile
    from transpile import relay

    x = relay.var("x", shape=(3,), dtype="float32")
    mod = relay.IRModule.from_expr(relay.Function([x], relay.nn.relu(x * relay.const(2.0))))
    f = transpile.compile(mod, backend="cpp")
    arg = np.array([-1.0, 0.5, 2.0], "float32")
    assert cache.clear() >= 1 and cache.info().entries == 0
    np.testing.assert_allclose(f(arg), [0.0, 1.0, 4.0])  # mapped before: keeps working
    g = transpile.compile(mod, backend="cpp")  # rebuilt into the emptied cache
    np.testing.assert_allclose(g(arg), [0.0, 1.0, 4.0])
    assert cache.info().folders["cpp"].entries == 1
