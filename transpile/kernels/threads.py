"""Settings of TVM's kernel thread pool: how many threads, how idle workers wait, whether they are pinned.

TVM (libtvm_runtime 0.27) reads them from the environment: TVM_NUM_THREADS (else OMP_NUM_THREADS,
else half the logical CPUs on x86, which is 1 on a 2-vCPU machine) when a calling thread's pool
is created; TVM_BIND_THREADS (pin each worker to its own core unless set to 0) then too;
TVM_THREAD_POOL_SPIN_COUNT (sched_yield calls an idle worker makes before sleeping, default
300000) once per process. Its loops are split statically, one equal part per thread.

Defaults here (what `configure_threads()` and the native libraries' constructors set, each only
where the user has not): all usable cores, passive waits (spin count 0) and no pinning. Measured on
2 cores with one other CPU-bound process: TVM's own spin/bind defaults made ResNet-50 3-30x slower
(a yielding worker queues behind the other process's time slice; a pinned one cannot leave its busy
core), while passive waits stay near the one-thread time; alone they cost ~5 % on ResNet-50 and
~30 % on MobileNet v2 (a wake-up per parallel loop). See README, "Threads".

A native library that runs kernels outside Python does the same in a constructor
(`THREADS_INIT_CPP` below; transpile_rt.h and tir_shim.cc carry their own copy).
"""

from __future__ import annotations

import os

__all__ = ["usable_cpus", "configure_threads", "thread_settings", "THREAD_DEFAULTS", "THREADS_INIT_CPP"]

# Environment defaults for TVM's pool, applied where the user set nothing.
THREAD_DEFAULTS = {"TVM_THREAD_POOL_SPIN_COUNT": "0", "TVM_BIND_THREADS": "0"}

THREADS_INIT_CPP = r"""
#include <sched.h>
#include <cstdlib>
#include <string>
__attribute__((constructor)) static void transpile_configure_threads() {
  // Passive waits, no pinning, all usable cores: unless the user chose (see transpile/kernels/threads.py).
  setenv("TVM_THREAD_POOL_SPIN_COUNT", "0", 0);
  setenv("TVM_BIND_THREADS", "0", 0);
  if (std::getenv("TVM_NUM_THREADS") || std::getenv("OMP_NUM_THREADS")) return;
  cpu_set_t set;
  int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  setenv("TVM_NUM_THREADS", std::to_string(n > 0 ? n : 1).c_str(), 0);
}
"""


def usable_cpus() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def configure_threads() -> int:
    """Applies the defaults (all usable cores, passive waits, no pinning) where the user set nothing.

    Effective for thread pools created afterwards (TVM creates one per calling thread, lazily; the
    spin count is read once per process). Returns the thread count that applies.
    """
    for name, value in THREAD_DEFAULTS.items():
        os.environ.setdefault(name, value)
    for name in ("TVM_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name)
        if value:
            try:
                return max(int(value), 1)
            except ValueError:
                break
    count = usable_cpus()
    os.environ["TVM_NUM_THREADS"] = str(count)
    return count


def thread_settings() -> dict:
    """The pool settings as the process's C environment holds them (where the native libraries'
    constructors write their defaults, which Python's os.environ does not see)."""
    import ctypes

    getenv = ctypes.CDLL(None).getenv
    getenv.restype = ctypes.c_char_p
    getenv.argtypes = [ctypes.c_char_p]
    names = ("TVM_NUM_THREADS", "OMP_NUM_THREADS", "TVM_THREAD_POOL_SPIN_COUNT", "TVM_BIND_THREADS")
    found = {name: getenv(name.encode()) for name in names}
    return {name: value.decode() for name, value in found.items() if value is not None}
