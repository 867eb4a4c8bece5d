"""Relay source files shipped with transpile (the Prelude)."""
