"""Run as a subprocess by test_store.py: one "agent" writing many entries into a shared store.

argv: root, agent name, entry count. Every agent also saves under the shared call id ``shared``
(each save gets its own ref: ``shared``, ``shared-2``...).
"""

from __future__ import annotations

import sys
from pathlib import Path

from jupyter_codelia.cache import ToolOutputCacheStore


def main() -> None:
    root, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    store = ToolOutputCacheStore(root, max_bytes=400_000, index_stride=64)
    for i in range(count):
        with store.writer(tool_call_id=f"{name}-{i}", tool_name="shell") as writer:
            for k in range(50):
                writer.write(f"{name} entry {i} line {k}\n")
        store.save(tool_call_id="shared", tool_name="shell", content=f"{name} {i}\n" * 200)
        store.read(f"{name}-{i}", 10, 5)
    print("done", flush=True)


if __name__ == "__main__":
    main()
