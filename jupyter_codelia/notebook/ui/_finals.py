"""The final static form of codelia's live widgets, kept for the notebook tabs.

A live widget that finishes after its cell (a background run's panel, job cards) cannot be
replaced by display id in JupyterLab. Its final bundle is kept here by the widget's model id and
announced (the kernel extension wires :attr:`FinalOutputs.announce` to the tabs' client), and a
tab opening a notebook asks :func:`output_states` which of its codelia widget outputs are still
live and which have a final form. Imports nothing heavy: the extension loads it at
``%load_ext``.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any

MAX_BYTES = 64 * 1024 * 1024
"""The final bundles kept for the tabs (newest first; each is one finished output's HTML)."""
MAX_OPEN = 20
"""Finished live widgets kept open for front ends without jupyter-codelia."""


class FinalOutputs:
    """The static bundles of live widgets that finished, by the widget's model id.

    The notebook tabs replace a finished widget's output with its bundle when told (``announce``,
    wired by the kernel extension to the tabs' client), and ask :meth:`states` for the widget
    outputs of a notebook they open. The newest bundles are kept, within ``max_bytes``.

    A finished widget may stay open for front ends without jupyter-codelia (they keep showing
    the widget, whose content is its final form): the newest ``max_open`` stay, older ones are
    closed (their ``close`` is called), so a long session does not keep every one in the kernel.
    """

    def __init__(self, max_bytes: int = MAX_BYTES, max_open: int = MAX_OPEN) -> None:
        self.max_bytes = max_bytes
        self.max_open = max_open
        self.announce: Callable[[str, dict[str, Any]], None] | None = None
        self._bundles: OrderedDict[str, tuple[dict[str, Any], int]] = OrderedDict()
        self._live: set[str] = set()
        self._open: deque[Callable[[], None]] = deque()
        self._size = 0
        self._lock = threading.Lock()

    def showing(self, model_id: str) -> None:
        with self._lock:
            self._live.add(model_id)

    def finished(
        self, model_id: str, bundle: dict[str, Any], close: Callable[[], None] | None = None
    ) -> None:
        """``model_id`` shows ``bundle`` for good: keep it, and tell the notebook tabs.
        ``close``: the widget stays open, and this closes it once it is not among the newest
        ``max_open``."""
        size = sum(len(str(value)) for value in bundle.values())
        with self._lock:
            self._live.discard(model_id)
            if size <= self.max_bytes:
                self._bundles[model_id] = (bundle, size)
                self._size += size
            while self._size > self.max_bytes and self._bundles:
                _, (_, dropped) = self._bundles.popitem(last=False)
                self._size -= dropped
            if close is not None:
                self._open.append(close)
        if self.announce is not None:
            self.announce(model_id, bundle)
        self.close_over_budget()

    def close_over_budget(self) -> None:
        """Close the finished widgets beyond the newest ``max_open``."""
        with self._lock:
            over = [self._open.popleft() for _ in range(len(self._open) - self.max_open)]
        for close in over:
            close()

    def states(self, model_ids: Iterable[str]) -> dict[str, Any]:
        """What a tab should show for each widget output it found: ``{"live": true}`` (leave
        the widget), ``{"data": bundle}`` (its final form); ids not listed are unknown here (a
        restarted kernel): the tab shows the output's own fallback."""
        with self._lock:
            known: dict[str, Any] = {}
            for model_id in model_ids:
                if model_id in self._live:
                    known[model_id] = {"live": True}
                elif model_id in self._bundles:
                    known[model_id] = {"data": self._bundles[model_id][0]}
            return known


FINALS = FinalOutputs()


def output_states(model_ids: list[str]) -> str:
    """:meth:`FinalOutputs.states` as JSON, for the extension's silent user expression."""
    return json.dumps(FINALS.states(model_ids))
