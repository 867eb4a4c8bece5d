"""The native build cache on disk: what it holds, clearing it, and least-recently-used eviction under TRANSPILE_CACHE_MAX.

Layout (see backends/native.py): `<root>/<folder>/<key>/` entries, one folder per user (`cpp`,
`tir`, `pch`); loose files beside them (`tir/shim-*.o`, `*.lock`); dot-named directories are
builds in progress (`.<key>-xxxx`, renamed into place when done) or entries being deleted
(`.trash-*`).

Concurrency (several processes building, loading and evicting at once):
- An entry leaves its place in one atomic rename (to `.trash-*`), and only then is deleted, so a
  reader finds either the whole entry with its info.json or nothing. A process that already
  loaded a library keeps its mapping after the file is deleted.
- "Used" is the entry directory's mtime. `touch` sets it under a shared lock on `<root>/.lock`;
  the evictor re-reads it under the exclusive lock just before the rename, and never takes an
  entry used in the last `RECENT_USE_SECONDS`. So a hit that touched its entry (touch returned
  True) can load it safely for that long; a touch that finds the entry gone returns False and the
  caller rebuilds.
- One evictor at a time (`<root>/.evict.lock`, not waited for: the running one does the job).
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from pathlib import Path

from .errors import TranspileError

__all__ = [
    "CacheError",
    "CacheInfo",
    "FolderUsage",
    "DEFAULT_MAX_BYTES",
    "root",
    "parse_size",
    "max_size",
    "info",
    "clear",
    "touch",
    "evict",
    "format_size",
]

# ResNet-50's library is ~100 MB (about its weights' bytes), so a big model costs ~100-250 MB
# per backend and a small program well under 1 MB: 5 GiB keeps a dozen real models on both
# native backends plus thousands of small programs, and stays small next to a ~100 GB disk.
DEFAULT_MAX_BYTES = 5 * 2**30
MAX_ENV = "TRANSPILE_CACHE_MAX"
RECENT_USE_SECONDS = 600  # a hit loads its library within seconds of touching it; 10 min is ample
STALE_BUILD_SECONDS = 3600  # a build's temp dir older than this belongs to a dead process
KNOWN_FOLDERS = ("cpp", "tir", "pch")
TRASH_PREFIX = ".trash-"
UNLIMITED_WORDS = ("0", "none", "unlimited", "off")

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


class CacheError(TranspileError):
    """A bad cache setting (TRANSPILE_CACHE_MAX) or request (an unknown backend folder)."""


def root() -> Path:
    """The cache root: $TRANSPILE_CACHE_DIR, else ~/.cache/transpile (native.cache_root)."""
    from .backends.native import cache_root

    return cache_root()


def parse_size(text: str, variable: str = MAX_ENV) -> int | None:
    """Bytes from "500M", "4G", "1.5GiB", "123456" (K/M/G/T are powers of 1024); None = unlimited ("0", "none")."""
    if text.strip().lower() in UNLIMITED_WORDS:
        return None
    match = _SIZE.match(text)
    if not match:
        raise CacheError(
            f"{variable}={text!r} is not a size: use bytes or a number with K, M, G or T "
            f"(powers of 1024, e.g. 500M, 4G), or 0/none for no limit"
        )
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def max_size() -> int | None:
    """The size limit in bytes from $TRANSPILE_CACHE_MAX (default DEFAULT_MAX_BYTES); None = unlimited."""
    text = os.environ.get(MAX_ENV)
    if text is None or not text.strip():
        return DEFAULT_MAX_BYTES
    return parse_size(text)


def format_size(size: int) -> str:
    """`512 B`, `12.0 KiB`, `1.5 GiB`."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------------------------
# Looking at the disk


def _tree_size(path: Path) -> int:
    """Bytes of the files under `path` (symlinks not followed; vanishing files count 0)."""
    try:
        if not path.is_dir() or path.is_symlink():
            return path.lstat().st_size
    except OSError:
        return 0
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _folders(cache: Path) -> list[Path]:
    try:
        return sorted(p for p in cache.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _is_entry(path: Path) -> bool:
    return not path.name.startswith(".") and path.is_dir() and not path.is_symlink()


class FolderUsage:
    """Entries and bytes of one cache folder (`cpp`, `tir`, `pch`)."""

    def __init__(self, name: str, entries: int = 0, size: int = 0, other_size: int = 0):
        self.name = name
        self.entries = entries
        self.size = size  # bytes of the entries
        self.other_size = other_size  # loose files (shims), builds in progress, trash

    def __repr__(self) -> str:
        return f"FolderUsage({self.name!r}, entries={self.entries}, size={self.size}, other_size={self.other_size})"


class CacheInfo:
    """What `info()` found: the root, each folder's usage, the total and the limit (None: unlimited)."""

    def __init__(self, root: Path, folders: dict, limit: int | None, limit_source: str):
        self.root = root
        self.folders = folders
        self.limit = limit
        self.limit_source = limit_source

    @property
    def entries(self) -> int:
        return sum(f.entries for f in self.folders.values())

    @property
    def total_size(self) -> int:
        return sum(f.size + f.other_size for f in self.folders.values())

    def format(self) -> str:
        """The text `transpile cache info` prints."""
        where = "TRANSPILE_CACHE_DIR" if os.environ.get("TRANSPILE_CACHE_DIR") else "default; set TRANSPILE_CACHE_DIR"
        lines = [f"cache: {self.root} ({where})"]
        if not self.folders:
            lines.append("  (empty)")
        for usage in self.folders.values():
            noun = "entry" if usage.entries == 1 else "entries"
            line = f"  {usage.name:<6} {usage.entries:>6} {noun:<8} {format_size(usage.size):>10}"
            if usage.other_size:
                line += f"  (+{format_size(usage.other_size)} shared files, builds in progress)"
            lines.append(line)
        limit = "no limit" if self.limit is None else format_size(self.limit)
        noun = "entry" if self.entries == 1 else "entries"
        lines.append(
            f"total: {format_size(self.total_size)} in {self.entries} {noun}; limit: {limit} ({self.limit_source})"
        )
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return f"<CacheInfo {self.root} entries={self.entries} size={self.total_size} limit={self.limit}>"


def info() -> CacheInfo:
    """Where the cache is, entries and bytes per folder, and the size limit."""
    cache = root()
    limit = max_size()
    source = f"{MAX_ENV}={os.environ[MAX_ENV]}" if os.environ.get(MAX_ENV, "").strip() else f"default; set {MAX_ENV}"
    folders = {}
    for folder in _folders(cache):
        usage = FolderUsage(folder.name)
        for child in _children(folder):
            size = _tree_size(child)
            if _is_entry(child):
                usage.entries += 1
                usage.size += size
            else:
                usage.other_size += size
        folders[folder.name] = usage
    return CacheInfo(cache, folders, limit, source)


# ---------------------------------------------------------------------------------------------
# Locks and removal


class _Lock:
    """An fcntl lock on `path` (shared or exclusive; `wait=False` gives up at once). Never raises:
    where the lock cannot be had for a reason other than contention (read-only cache, no fcntl),
    `acquired` is None and callers go on unlocked."""

    def __init__(self, path: Path, exclusive: bool, wait: bool = True):
        self.path = path
        self.exclusive = exclusive
        self.wait = wait
        self.fd = None
        self.acquired = None  # True, False (someone else holds it), None (no locking here)

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return self
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return self
        flags = fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(self.fd, flags if self.wait else flags | fcntl.LOCK_NB)
            self.acquired = True
        except BlockingIOError:
            self.acquired = False
        except OSError:
            pass
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
        return False


def _lock_path(cache: Path) -> Path:
    return cache / ".lock"


def _move_to_trash(path: Path) -> Path | None:
    """Renames `path` to a `.trash-*` sibling (atomic: readers see it whole or not at all); None if it is gone."""
    trash = path.with_name(f"{TRASH_PREFIX}{path.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, trash)
    except OSError:  # gone already (another evictor), or not ours to remove
        return None
    return trash


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def _sweep_leftovers(folder: Path, now: float) -> int:
    """Deletes trash and the temp dirs of builds dead for STALE_BUILD_SECONDS; returns the bytes freed."""
    freed = 0
    for child in _children(folder):
        if not child.name.startswith("."):
            continue
        if child.name.startswith(TRASH_PREFIX):
            freed += _tree_size(child)
            _delete(child)  # another process may be deleting it too: rmtree ignores what vanished
            continue
        mtime = _mtime(child)
        if child.is_dir() and mtime is not None and now - mtime > STALE_BUILD_SECONDS:
            size = _tree_size(child)
            trash = _move_to_trash(child)
            if trash is not None:
                _delete(trash)
                freed += size
    return freed


# ---------------------------------------------------------------------------------------------
# The three operations builds and users call


def touch(entry_dir) -> bool:
    """Marks a cache entry used now (it becomes the most recently used; eviction spares it for
    RECENT_USE_SECONDS). False if the entry is gone (evicted): the caller should rebuild it.

    Called by the build code on every cache hit, before reading the entry: a few system calls."""
    entry = Path(entry_dir)
    with _Lock(_lock_path(entry.parent.parent), exclusive=False):
        try:
            os.utime(entry)
            return True
        except FileNotFoundError:
            return False
        except OSError:  # a read-only cache: usable, just not marked
            return entry.is_dir()


def clear(backend: str | None = None) -> int:
    """Removes every entry (of one folder: "cpp", "tir", "pch") and the shared files beside them;
    returns how many entries went. Builds in progress keep their temp dirs."""
    cache = root()
    if backend is not None:
        present = [f.name for f in _folders(cache)]
        if "/" in backend or backend.startswith(".") or backend not in set(KNOWN_FOLDERS) | set(present):
            raise CacheError(
                f"no cache folder {backend!r} in {cache} (folders: {', '.join(present) or 'none'}; "
                f"native backends use {', '.join(KNOWN_FOLDERS)})"
            )
        folders = [cache / backend]
    else:
        folders = _folders(cache)
    removed, trash = 0, []
    now = time.time()
    with _Lock(_lock_path(cache), exclusive=True):
        for folder in folders:
            for child in _children(folder):
                if child.name.startswith(".") or child.suffix == ".lock":
                    continue  # in-progress builds, trash (swept below); lock files others may hold
                was_entry = _is_entry(child)
                moved = _move_to_trash(child)
                if moved is not None:
                    trash.append(moved)
                    removed += was_entry
    for path in trash:
        _delete(path)
    for folder in folders:
        _sweep_leftovers(folder, now)
    return removed


_FROM_ENV = object()


def evict(keep=(), limit=_FROM_ENV, min_age: float = RECENT_USE_SECONDS) -> list[Path]:
    """Removes least-recently-used entries until the cache is under `limit` bytes (default: from
    TRANSPILE_CACHE_MAX; None: no limit), never one in `keep` nor one used in the last `min_age`
    seconds; also sweeps trash and dead builds' temp dirs. Returns the removed entries' paths.

    Called after every build; if another process is evicting right now, returns at once."""
    if limit is _FROM_ENV:
        limit = max_size()
    cache = root()
    if not cache.is_dir():
        return []
    with _Lock(cache / ".evict.lock", exclusive=True, wait=False) as running:
        if running.acquired is False:
            return []  # another process is evicting: it will bring the cache under the limit
        now = time.time()
        for folder in _folders(cache):
            _sweep_leftovers(folder, now)
        if limit is None:
            return []
        entries, total = [], 0
        for folder in _folders(cache):
            for child in _children(folder):
                size = _tree_size(child)
                total += size
                if _is_entry(child):
                    entries.append((_mtime(child) or 0.0, child, size))
        if total <= limit:
            return []
        kept = {_resolved(p) for p in keep}
        entries.sort(key=lambda item: (item[0], str(item[1])))
        removed, trash = [], []
        with _Lock(_lock_path(cache), exclusive=True):
            for _, entry, size in entries:
                if total <= limit:
                    break
                if _resolved(entry) in kept:
                    continue
                used = _mtime(entry)  # again, under the lock: a touch since the scan wins
                if used is None or time.time() - used < min_age:
                    continue
                moved = _move_to_trash(entry)
                if moved is not None:
                    trash.append(moved)
                    removed.append(entry)
                    total -= size
        for path in trash:
            _delete(path)  # after the lock: touches need not wait for rmtree
        return removed


def _resolved(path) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return str(path)
