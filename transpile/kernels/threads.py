"""Thread count of TVM's kernel thread pool.

TVM sizes its pool once, when a parallel kernel first runs in a thread, from TVM_NUM_THREADS,
else OMP_NUM_THREADS, else half the logical CPUs on x86 (it assumes hyper-threading), which is
1 on a 2-vCPU machine. `configure_threads()` makes "all cores" the default while honouring both
variables. A native library that runs kernels outside Python must do the same before its first
kernel call, e.g. in a constructor:

    if (!getenv("TVM_NUM_THREADS") && !getenv("OMP_NUM_THREADS"))
        setenv("TVM_NUM_THREADS", std::to_string(<usable cpus>).c_str(), 0);

(`THREADS_INIT_CPP` below is that snippet.)
"""

from __future__ import annotations

import os

__all__ = ["usable_cpus", "configure_threads", "THREADS_INIT_CPP"]

THREADS_INIT_CPP = r"""
#include <sched.h>
#include <cstdlib>
#include <string>
__attribute__((constructor)) static void transpile_configure_threads() {
  // TVM's pool defaults to half the logical CPUs on x86; use all of them unless the user chose.
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
    """Sets TVM_NUM_THREADS to the usable CPU count unless TVM_NUM_THREADS or OMP_NUM_THREADS is set.

    Effective for thread pools created afterwards (TVM creates one per calling thread, lazily).
    Returns the thread count that applies.
    """
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
