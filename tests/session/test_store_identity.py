"""The store id: one id per home, shared by every process that sees that home."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from jupyter_codelia.session import STORE_ID_FILE, ensure_store_id, read_store_id

RACE = """
import sys, time
from pathlib import Path
from jupyter_codelia.session import ensure_store_id
start = float(sys.argv[2])
while time.time() < start:
    pass
print(ensure_store_id(Path(sys.argv[1])))
"""


def test_the_first_call_creates_a_private_id_that_later_calls_return(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert read_store_id(home) is None

    first = ensure_store_id(home)

    assert str(uuid.UUID(first)) == first
    assert ensure_store_id(home) == first
    assert read_store_id(home) == first
    assert (home.stat().st_mode & 0o777) == 0o700
    assert [p.name for p in home.iterdir()] == [STORE_ID_FILE]  # no temp file left behind


def test_processes_racing_on_a_fresh_home_agree_on_one_id(tmp_path: Path) -> None:
    home = tmp_path / "shared"
    import time

    start = str(time.time() + 1.5)
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(home), start],
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        for _ in range(4)
    ]
    ids = {racer.communicate(timeout=60)[0].strip() for racer in racers}

    assert ids == {read_store_id(home)}
    assert [p.name for p in home.iterdir()] == [STORE_ID_FILE]


@pytest.mark.parametrize("damage", ["", "not-a-uuid\n", "\xff\xfe"])
def test_a_damaged_id_file_is_replaced(tmp_path: Path, damage: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / STORE_ID_FILE).write_bytes(damage.encode("latin-1"))
    assert read_store_id(home) is None

    fresh = ensure_store_id(home)

    assert read_store_id(home) == fresh


def test_a_home_that_is_a_file_is_an_error_naming_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("oops")

    with pytest.raises(OSError) as caught:
        ensure_store_id(home)

    assert str(home) in str(caught.value)
