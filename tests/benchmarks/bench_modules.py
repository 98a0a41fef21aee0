"""Import a script of ``benchmarks/`` as a module for its tests (the folder is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(filename: str) -> ModuleType:
    """``benchmarks/<filename>`` as ``knowhub_<stem>``, registered in ``sys.modules`` (its
    dataclasses need that), with the folder on ``sys.path`` for its sibling imports."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"knowhub_{Path(filename).stem}", BENCHMARKS / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
