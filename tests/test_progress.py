"""transpile.progress: nested stages, thread-safe advances, log records, listeners, the terminal display, stage times."""

from __future__ import annotations

import io
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from transpile import progress


@pytest.fixture(autouse=True)
def fresh_times():
    progress.reset()
    yield
    progress.reset()


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def collect():
    events = []
    return events, progress.listen(events.append)


def test_nested_stages_have_qualified_names_and_times():
    with progress.stage("build") as outer:
        with progress.stage("kernels", total=2) as inner:
            inner.advance(2)
        with progress.stage("link"):
            pass
    assert (outer.path, inner.path, inner.depth) == ("build", "build/kernels", 1)
    names = [name for name, _ in progress.stage_times()]
    assert names == ["build/kernels", "build/link", "build"]  # in order of finishing
    times = dict(progress.stage_times())
    assert times["build"] >= times["build/kernels"] + times["build/link"] - 1e-6
    progress.reset()
    assert progress.stage_times() == []


def test_stage_time_is_measured():
    with progress.stage("sleep"):
        time.sleep(0.05)
    ((name, seconds),) = progress.stage_times()
    assert name == "sleep" and 0.04 < seconds < 2


def test_advance_is_thread_safe():
    events, listening = collect()
    with listening, progress.stage("kernels", total=8 * 500) as st:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: [st.advance(1, detail=f"k{i}") for _ in range(500)], range(8)))
    assert st.done == 4000
    advances = [e for e in events if e.kind == "advance"]
    # Every advance is counted once: the reported counts are exactly 1..4000.
    assert sorted(e.done for e in advances) == list(range(1, 4001))
    assert events[-1].kind == "end" and events[-1].done == 4000


def test_stages_opened_in_worker_threads_nest_under_the_open_stage():
    paths = []
    both_open = threading.Barrier(2)

    def work(i):
        with progress.stage(f"kernel{i}") as st:
            both_open.wait(10)  # the two workers' stages are open at the same time
            with progress.stage("lower") as inner:
                paths.append(inner.path)
            paths.append(st.path)

    with progress.stage("build"):
        with progress.stage("kernels"):
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(work, range(2)))
    assert sorted(paths) == [
        "build/kernels/kernel0",
        "build/kernels/kernel0/lower",
        "build/kernels/kernel1",
        "build/kernels/kernel1/lower",
    ]


def test_listener_events():
    events, listening = collect()
    with listening:
        with progress.stage("build"):
            with progress.stage("kernels", total=2) as st:
                st.advance(1, detail="fused_dense")
                st.advance(1)
            progress.note("cache hit: /somewhere")
    with progress.stage("unheard"):
        pass
    kinds = [(e.kind, e.path) for e in events]
    assert kinds == [
        ("start", "build"),
        ("start", "build/kernels"),
        ("advance", "build/kernels"),
        ("advance", "build/kernels"),
        ("end", "build/kernels"),
        ("note", "build"),
        ("end", "build"),
    ]
    first_advance = events[2]
    assert (first_advance.name, first_advance.total, first_advance.done, first_advance.detail) == (
        "kernels",
        2,
        1,
        "fused_dense",
    )
    assert events[3].detail == "fused_dense"  # the last detail sticks
    assert events[1].depth == 1 and events[0].depth == 0
    assert events[5].message == "cache hit: /somewhere"
    assert all(e.elapsed >= 0 for e in events)
    assert events[-1].elapsed >= events[4].elapsed


def test_failed_stage_is_reported_and_reraised(caplog):
    events, listening = collect()
    caplog.set_level(logging.INFO, logger="transpile.build")
    with listening, pytest.raises(ValueError):
        with progress.stage("link", total=3) as st:
            st.advance()
            raise ValueError("boom")
    assert events[-1].kind == "end" and events[-1].failed
    assert "link: failed after" in caplog.text and "(1/3 done)" in caplog.text


def test_a_broken_listener_does_not_break_the_job(caplog):
    def broken(event):
        raise RuntimeError("display gone")

    with progress.listen(broken):
        with progress.stage("build") as st:
            st.advance()
    assert "progress listener" in caplog.text


def test_log_records(caplog):
    caplog.set_level(logging.DEBUG, logger="transpile.build")
    with progress.stage("kernels", total=2) as st:
        st.advance(1, detail="fused_conv2d_add_relu")
        st.advance(1, detail="fused_dense")
    progress.note("cache hit: /x")
    with progress.stage("pipeline"):
        pass
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "transpile.build"]
    assert records[0] == ("INFO", "kernels: started (2 steps)")
    assert records[1] == ("DEBUG", "kernels: 1/2 fused_conv2d_add_relu")
    assert records[2] == ("DEBUG", "kernels: 2/2 fused_dense")
    level, message = records[3]
    assert level == "INFO" and message.startswith("kernels: 2/2 done in ") and message.endswith(" s")
    assert records[4] == ("INFO", "cache hit: /x")
    assert records[5] == ("INFO", "pipeline: started")
    assert records[6][1].startswith("pipeline: done in ")
    assert caplog.records[3].stage == "kernels"


def test_advance_without_listeners_is_cheap():
    logging.getLogger("transpile.build").setLevel(logging.WARNING)
    try:
        with progress.stage("loop", total=20000) as st:
            start = time.perf_counter()
            for _ in range(20000):
                st.advance(1)
            per_call = (time.perf_counter() - start) / 20000
    finally:
        logging.getLogger("transpile.build").setLevel(logging.NOTSET)
    assert per_call < 20e-6  # ~0.3 us here; generous for a loaded machine


def test_terminal_live_line_on_a_tty():
    stream = FakeTTY()
    with progress.terminal(stream):
        with progress.stage("build"):
            with progress.stage("kernels", total=53) as st:
                time.sleep(0.1)  # redraws are at most 20 per second
                st.advance(12, detail="fused_conv2d_add_relu")
            progress.note("only shown when verbose")
    out = stream.getvalue()
    assert "\rbuild" in out.replace("\x1b[K", "")
    assert "build › kernels 12/53 fused_conv2d_add_relu  " in out
    assert "only shown" not in out and "stage times" not in out
    assert out.endswith("\r\x1b[K")  # the live line is cleared at the end
    assert "\n" not in out  # nothing else printed


def test_terminal_line_fits_the_width():
    stream = FakeTTY()
    with progress.terminal(stream):
        with progress.stage("kernels", total=1) as st:
            st.advance(1, detail="x" * 500)
    assert all(len(part) <= 200 for part in stream.getvalue().split("\r"))


def test_terminal_not_a_tty_stays_silent():
    stream = io.StringIO()
    with progress.terminal(stream) as display:
        with progress.stage("build", total=1) as st:
            st.advance(1)
    assert display is None and stream.getvalue() == ""


def test_terminal_verbose_without_tty_prints_finished_stages_and_a_table():
    stream = io.StringIO()
    with progress.terminal(stream, verbose=True):
        with progress.stage("build"):
            for _ in range(3):
                with progress.stage("kernel", total=1) as st:
                    st.advance(1)
            progress.note("cache hit: /x")
    out = stream.getvalue()
    assert "\r" not in out and "\x1b" not in out  # no live line in a log
    lines = out.splitlines()
    assert lines[0].startswith("build › kernel: 1/1 done in ")
    assert "  cache hit: /x" in lines
    assert any(line.startswith("build: done in ") for line in lines)
    table = out[out.index("stage times:") :].splitlines()
    assert table[1].split()[0] == "build"
    assert table[2].split()[:2] == ["kernel", "×3"]  # repeated stages are summed


def test_terminal_verbose_on_a_tty_prints_above_the_live_line():
    stream = FakeTTY()
    with progress.terminal(stream, verbose=True):
        with progress.stage("build"):
            with progress.stage("link"):
                pass
    out = stream.getvalue()
    assert "\r\x1b[Kbuild › link: done in " in out
    assert "stage times:" in out


def test_terminal_clock_ticks_without_events():
    stream = FakeTTY()
    with progress.terminal(stream):
        with progress.stage("C++ compile"):
            time.sleep(1.3)  # the compiler runs; nothing reports
    redraws = [p for p in stream.getvalue().split("\r\x1b[K") if p.startswith("C++ compile")]
    assert len(redraws) >= 2 and redraws[-1] != redraws[0]


def test_terminal_listener_is_removed_afterwards():
    stream = FakeTTY()
    with progress.terminal(stream):
        pass
    with progress.stage("later"):
        pass
    assert "later" not in stream.getvalue()
    assert not progress._listeners


def test_format_seconds():
    assert progress.format_seconds(0.123) == "0.12 s"
    assert progress.format_seconds(12.34) == "12.3 s"
    assert progress.format_seconds(475) == "7 min 55 s"


def test_threads_see_a_consistent_current_stage():
    seen = []
    barrier = threading.Barrier(2)

    def worker():
        barrier.wait()
        seen.append(progress.current())

    thread = threading.Thread(target=worker)
    thread.start()
    with progress.stage("build") as st:
        barrier.wait()
        thread.join()
    assert seen == [st] and progress.current() is None
