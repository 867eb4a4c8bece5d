"""Entry point of `python -m bench`; fixes the thread counts before TVM or PyTorch is imported."""

import os

# Every TVM-based peer (cpp kernels, Relax VM) and PyTorch use all cores, the same way in every run.
os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

import sys  # noqa: E402

if sys.argv[1:2] == ["builds"]:  # `python -m bench builds`: build times and artifact sizes
    from .builds import main  # noqa: E402

    raise SystemExit(main(sys.argv[2:]))

if sys.argv[1:2] == ["kernels"]:  # `python -m bench kernels --model NAME`: time per kernel, GFLOP/s
    from .kernels import main  # noqa: E402

    raise SystemExit(main(sys.argv[2:]))

if sys.argv[1:2] == ["boundary"]:  # `python -m bench boundary`: List conversion per element, calls from threads
    os.environ["TVM_NUM_THREADS"] = "1"  # one thread per call: the caller's threads are the only parallelism
    from .boundary import main  # noqa: E402

    raise SystemExit(main(sys.argv[2:]))

if sys.argv[1:2] == ["models"]:  # `python -m bench models`: real models vs ONNX Runtime, PyTorch, torch.compile
    from .models import main  # noqa: E402 - sets its own threads and waits before any library loads

    raise SystemExit(main(sys.argv[2:]))

from .runner import main  # noqa: E402 - after the environment is set

raise SystemExit(main())
