"""Shared setup of the standard-tools tests.

The suite runs with ``--import-mode=importlib``, so this directory is put on ``sys.path`` for the
test modules to import their ``_``-prefixed helper modules (``_web_servers``,
``_file_tools_helpers``).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
