#!/usr/bin/python3
"""Run a fixture writer (a make_fixtures.py) when python3 has what it needs.

Usage: run_fixture.py SCRIPT ARGS...

The fixtures are written for the tests only (build_by_default: false), but
meson before 1.7 (Debian 12 has 1.0.1) builds every test's prerequisites
with `meson compile` all the same. So that building the library needs no
numpy there either, a python3 without numpy or PyYAML writes nothing and
says so (exit 0): `meson test` then runs this again before the tests, and
they fail naming the missing fixture. With both, SCRIPT runs as if called
directly.
"""
import importlib
import os
import sys


def has(module, attr):
    """Whether module imports and is the real one (not an empty namespace left behind)."""
    try:
        return hasattr(importlib.import_module(module), attr)
    except ImportError:
        return False


missing = [name for name, module, attr in (("numpy", "numpy", "zeros"), ("PyYAML", "yaml", "safe_load"))
           if not has(module, attr)]
if missing:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"{os.path.relpath(sys.argv[1], root)}: not run: python3 lacks {' and '.join(missing)}, which the tests "
          "need to write their fixtures (building does not)")
    sys.exit(0)
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
