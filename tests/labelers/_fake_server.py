"""The backend tests' fake OpenAI server, for the judge tests (tests/backends is no package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any


def fake_server_module() -> Any:
    """Import ``tests/backends/_fake_openai_server.py``, once."""
    name = "_fake_openai_server"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "backends" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
