"""Progress and timing of long jobs: nested named stages, notes, listeners, logging and a terminal display.

    from transpile import progress
    with progress.stage("kernels", total=n) as st:     # nested inside an open stage: "build/kernels"
        st.advance(1, detail="fused_conv2d_add_relu")  # thread-safe
    progress.note("cache hit: /path")
    with progress.listen(callback): ...                 # callback(Event) for every start/advance/end/note
    progress.stage_times()                              # [(qualified name, seconds)] finished since reset()

Every stage start and end is logged on `logging.getLogger("transpile.build")` at INFO
("kernels: 53/53 done in 12.3 s"), every advance at DEBUG: that is what API users see. The CLI
shows a live status line through `terminal()`.

Nobody listening must cost next to nothing (a cache hit runs stages too): an advance takes a
lock, adds, and looks at a tuple and at the logger's cached level. Only the standard library's
light modules are imported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time

__all__ = [
    "Event",
    "Stage",
    "stage",
    "note",
    "listen",
    "stage_times",
    "reset",
    "current",
    "terminal",
    "format_seconds",
]

log = logging.getLogger("transpile.build")

_state_lock = threading.Lock()
_listeners: tuple = ()  # replaced, never mutated: emitters iterate it without the lock
_open_stages: list = []  # every open stage, oldest first (a worker thread's stage nests under the newest)
_finished: list = []  # (qualified name, seconds) in order of finishing
_thread_stack = threading.local()
_start_counter = 0  # orders stages by start (the terminal's table lists them in that order)


class Event:
    """What a listener receives: `kind` is "start", "advance", "end" or "note".

    `name` is the stage's own name, `path` the qualified one ("build/kernels"), `depth` 0 for a
    top-level stage; `total` may be None; `elapsed` is seconds since the stage started; `failed`
    is set on the "end" of a stage left by an exception; `message` is a note's text.
    """

    __slots__ = ("kind", "name", "path", "depth", "total", "done", "detail", "elapsed", "failed", "message", "order")

    def __init__(
        self,
        kind,
        name="",
        path="",
        depth=0,
        total=None,
        done=0,
        detail="",
        elapsed=0.0,
        failed=False,
        message="",
        order=0,
    ):
        self.kind = kind
        self.name = name
        self.path = path
        self.depth = depth
        self.total = total
        self.done = done
        self.detail = detail
        self.elapsed = elapsed
        self.failed = failed
        self.message = message
        self.order = order  # start order of the stage within the process

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__ if getattr(self, k) not in ("", None))
        return f"Event({fields})"


def format_seconds(seconds: float) -> str:
    """`0.42 s`, `12.3 s`, `7 min 55 s`."""
    if seconds < 1:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s"


def _counts(done: int, total) -> str:
    return f"{done}/{total}" if total is not None else (str(done) if done else "")


class Stage:
    """One open (or finished) stage; `advance` may be called from any thread."""

    def __init__(self, name: str, total, parent, borrowed: bool = False):
        global _start_counter
        self.name = name
        self.total = total
        self.parent = parent
        # Anchored: reached from a top-level stage through parents opened in their own threads.
        # Only such a stage adopts the stages of threads that have none open (pool workers), so
        # two workers' stages nest beside each other, not inside one another.
        self.anchored = parent is None or (parent.anchored and not borrowed)
        self.path = f"{parent.path}/{name}" if parent is not None else name
        self.depth = parent.depth + 1 if parent is not None else 0
        self.done = 0
        self.detail = ""
        self.failed = False
        self._lock = threading.Lock()
        self._started = time.perf_counter()
        self._ended = None
        with _state_lock:
            _start_counter += 1
            self.order = _start_counter

    @property
    def elapsed(self) -> float:
        """Seconds since the start (frozen at the end)."""
        return (self._ended if self._ended is not None else time.perf_counter()) - self._started

    def advance(self, steps: int = 1, detail: str | None = None) -> None:
        """Counts `steps` more done; `detail` names what was just done (or is being done)."""
        with self._lock:
            self.done += steps
            done = self.done
            if detail is not None:
                self.detail = detail
            detail = self.detail
        if self._ended is None and (_listeners or log.isEnabledFor(logging.DEBUG)):
            log.debug("%s: %s %s", self.name, _counts(done, self.total), detail)
            _emit(self._event("advance", done=done, detail=detail))

    def set_total(self, total) -> None:
        """The number of steps, once known (shown on the next advance)."""
        self.total = total

    def _event(self, kind: str, **fields) -> Event:
        fields.setdefault("done", self.done)
        fields.setdefault("detail", self.detail)
        return Event(
            kind,
            name=self.name,
            path=self.path,
            depth=self.depth,
            total=self.total,
            elapsed=self.elapsed,
            failed=self.failed,
            order=self.order,
            **fields,
        )

    def __repr__(self) -> str:
        return f"<Stage {self.path} {_counts(self.done, self.total)} {self.elapsed:.3f} s>"


def _emit(event: Event) -> None:
    for callback in _listeners:
        try:
            callback(event)
        except Exception:  # a broken display must not break the build it reports on
            log.warning("progress listener %r failed", callback, exc_info=True)


def _stack() -> list:
    stack = getattr(_thread_stack, "stages", None)
    if stack is None:
        stack = _thread_stack.stages = []
    return stack


def current() -> Stage | None:
    """The stage a new stage would nest under: this thread's innermost, else the newest open
    stage of the job that started this thread's work (a worker's stages nest under the build's)."""
    stack = _stack()
    if stack:
        return stack[-1]
    with _state_lock:
        for candidate in reversed(_open_stages):
            if candidate.anchored:
                return candidate
    return None


@contextlib.contextmanager
def stage(name: str, total: int | None = None):
    """A named stage of `total` steps (None: unknown); nested inside the current stage, if any."""
    stack = _stack()
    st = Stage(name, total, current(), borrowed=not stack)
    stack.append(st)
    with _state_lock:
        _open_stages.append(st)
    log.info("%s: started%s", name, f" ({total} steps)" if total is not None else "", extra={"stage": st.path})
    if _listeners:
        _emit(st._event("start"))
    try:
        yield st
    except BaseException:
        st.failed = True
        raise
    finally:
        st._ended = time.perf_counter()
        stack.remove(st)
        with _state_lock:
            _open_stages.remove(st)
            _finished.append((st.path, st.elapsed))
        counts = _counts(st.done, st.total)
        if st.failed:
            message = f"{name}: failed after {format_seconds(st.elapsed)}" + (f" ({counts} done)" if counts else "")
        else:
            message = f"{name}: {counts + ' ' if counts else ''}done in {format_seconds(st.elapsed)}"
        log.info(message, extra={"stage": st.path, "elapsed": st.elapsed})
        if _listeners:
            _emit(st._event("end"))


def note(message: str) -> None:
    """A one-off message (INFO on the log; listeners get a "note" event)."""
    log.info(message)
    if _listeners:
        parent = current()
        _emit(
            Event(
                "note",
                message=message,
                path=parent.path if parent else "",
                depth=parent.depth + 1 if parent else 0,
            )
        )


@contextlib.contextmanager
def listen(callback):
    """Calls `callback(event)` for every event while the block runs (from whichever thread emits it)."""
    global _listeners
    with _state_lock:
        _listeners = _listeners + (callback,)
    try:
        yield callback
    finally:
        with _state_lock:
            remaining = list(_listeners)
            remaining.remove(callback)
            _listeners = tuple(remaining)


def stage_times() -> list[tuple[str, float]]:
    """(qualified stage name, seconds) of every stage finished in this process since `reset()`, in order of finishing."""
    with _state_lock:
        return list(_finished)


def reset() -> None:
    """Forgets the finished stages' times."""
    with _state_lock:
        _finished.clear()


# ---------------------------------------------------------------------------------------------
# The terminal display of the CLI


class _TerminalDisplay:
    """Renders events on a stream: a live line on a TTY, finished stages and notes when verbose."""

    REFRESH_SECONDS = 0.5  # the live line's clock keeps moving while a compiler runs silently
    MIN_REDRAW_SECONDS = 0.05  # advances from many threads do not flood the terminal

    def __init__(self, stream, verbose: bool, live: bool):
        self.stream = stream
        self.verbose = verbose
        self.live = live
        self.lock = threading.RLock()
        self.open: dict = {}  # stage order -> latest Event of that open stage
        self.clock_starts: dict = {}  # stage order -> perf_counter() at its start
        self.finished: list = []  # "end" events seen while displaying
        self.line_shown = False
        self.last_draw = 0.0
        self.closed = threading.Event()
        self.ticker = None

    def start(self) -> None:
        if self.live:
            self.ticker = threading.Thread(target=self._tick, name="transpile-progress", daemon=True)
            self.ticker.start()

    def _tick(self) -> None:
        while not self.closed.wait(self.REFRESH_SECONDS):
            with self.lock:
                if self.open:
                    self._draw()

    def on_event(self, event: Event) -> None:
        with self.lock:
            if event.kind == "start":
                self.open[event.order] = event
                self.clock_starts[event.order] = time.perf_counter() - event.elapsed
            elif event.kind == "advance":
                if event.order not in self.open:  # a stage opened before this display
                    self.clock_starts[event.order] = time.perf_counter() - event.elapsed
                self.open[event.order] = event
                if time.perf_counter() - self.last_draw < self.MIN_REDRAW_SECONDS:
                    return
            elif event.kind == "end":
                self.open.pop(event.order, None)
                self.clock_starts.pop(event.order, None)
                self.finished.append(event)
                if self.verbose:
                    self._print(self._finished_line(event))
            elif event.kind == "note":
                if self.verbose:
                    self._print("  " * event.depth + event.message)
            if self.live:
                self._draw()

    def _finished_line(self, event: Event) -> str:
        counts = _counts(event.done, event.total)
        what = "failed after" if event.failed else "done in"
        label = event.path.replace("/", " › ")
        return f"{label}: {counts + ' ' if counts else ''}{what} {format_seconds(event.elapsed)}"

    def _status(self) -> str:
        order = max(self.open)
        newest = self.open[order]
        parts = [newest.path.replace("/", " › ")]
        counts = _counts(newest.done, newest.total)
        if counts:
            parts.append(counts)
        if newest.detail:
            parts.append(newest.detail)
        # The newest stage's clock, kept here: events only come when something happens.
        seconds = time.perf_counter() - self.clock_starts.get(order, time.perf_counter())
        return " ".join(parts) + f"  {format_seconds(seconds)}"

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        # One column spare: a line filling the width wraps on some terminals, and \r then redraws
        # only its second half. A terminal of unknown width (0) gets 80.
        return max(20, columns - 1) if columns > 0 else 79

    def _draw(self) -> None:
        if not self.live or self.closed.is_set():
            return
        text = self._status()[: self._width()] if self.open else ""
        if not text and not self.line_shown:
            return
        self._write("\r\x1b[K" + text)
        self.line_shown = bool(text)
        self.last_draw = time.perf_counter()

    def _clear(self) -> None:
        if self.line_shown:
            self._write("\r\x1b[K")
            self.line_shown = False

    def _print(self, line: str) -> None:
        self._clear()
        self._write(line + "\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: stop drawing, keep building
            self.live = False

    def table(self) -> str:
        """Stage times seen while displaying, in start order, repeated stages summed (×N)."""
        rows: dict = {}
        for event in sorted(self.finished, key=lambda e: e.order):
            row = rows.setdefault(event.path, [event.depth, event.name, 0.0, 0])
            row[2] += event.elapsed
            row[3] += 1
        if not rows:
            return ""
        labels = {
            path: "  " * depth + name + (f" ×{count}" if count > 1 else "")
            for path, (depth, name, _, count) in rows.items()
        }
        width = max(len(label) for label in labels.values())
        lines = ["stage times:"]
        for path, (_, _, seconds, _) in rows.items():
            lines.append(f"  {labels[path]:<{width}}  {format_seconds(seconds):>10}")
        return "\n".join(lines) + "\n"

    def close(self, show_table: bool) -> None:
        with self.lock:
            self.closed.set()
            self._clear()
            if show_table:
                text = self.table()
                if text:
                    self._write(text)
        if self.ticker is not None:
            self.ticker.join()


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


@contextlib.contextmanager
def terminal(stream=None, verbose: bool = False):
    """The CLI's display: a live status line on a TTY (cleared at the end), nothing else elsewhere;
    `verbose` also prints each finished stage and notes as they come and a table of stage times at the end."""
    stream = sys.stderr if stream is None else stream
    live = _is_tty(stream)
    if not live and not verbose:
        yield None  # CI logs stay clean, and nobody listens: the build pays nothing
        return
    display = _TerminalDisplay(stream, verbose, live)
    display.start()
    try:
        with listen(display.on_event):
            yield display
    finally:
        display.close(show_table=verbose)
