"""Benchmarks of transpile's backends against the Relax VM, numpy and PyTorch: run with `python -m bench`."""
