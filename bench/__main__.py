"""Entry point of `python -m bench`; fixes the thread counts before TVM or PyTorch is imported."""

import os

# Every TVM-based peer (cpp kernels, Relax VM) and PyTorch use all cores, the same way in every run.
os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

from .runner import main  # noqa: E402 - after the environment is set

raise SystemExit(main())
