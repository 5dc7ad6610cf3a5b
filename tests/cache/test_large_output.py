"""A 1 GB output streamed into the store and searched with bounded memory.

Runs in a subprocess so the peak RSS it reports belongs to this work alone. Memory is asserted,
never time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_one_gigabyte_streamed_and_grepped_with_bounded_memory(tmp_path: Path) -> None:
    script = Path(__file__).with_name("_big_output_proc.py")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=850,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["growth"] < 100 * 1024 * 1024, result["growth"]
    entry = result["entry"]
    assert entry["size_bytes"] > 1_000_000_000
    per_block = result["lines_per_block"]
    blocks = result["blocks"]
    assert entry["line_count"] == per_block * blocks + 4 + 1  # 4 markers, final empty line
    first_marker = 250 * per_block + 1
    assert result["grep"].startswith(f"ref:big\n{first_marker:>5}  MARKER 250\n\nref:big\n")
    assert result["grep"].endswith("MARKER 750\n... (truncated)")
    assert result["regex_grep"] == f"ref:big\n{per_block * 1000 + 4:>5}  MARKER 1000"
    assert result["late_read"].startswith(f"{first_marker - 1:>5}  0123456789 abc"), result[
        "late_read"
    ]
    assert f"{first_marker:>5}  MARKER 250" in result["late_read"]
    assert (
        result["tail"]
        == "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ ......\n"
    )
