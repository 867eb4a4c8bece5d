"""Developer tools of the transpile project that are not part of the installed package."""
