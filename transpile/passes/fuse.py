"""Operator fusion pass (public entry point): see transpile.passes.fusion for the rules and the output contract."""

from __future__ import annotations

from .fusion import fuse, fusion_groups_text, is_primitive_function, kernels_of

__all__ = ["fuse", "kernels_of", "fusion_groups_text", "is_primitive_function"]
