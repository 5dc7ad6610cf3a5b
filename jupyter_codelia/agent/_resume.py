"""What changed between a saved session and the agent resuming it, told to the model.

Every snapshot records the context the conversation ran in (model, sandbox root, tool names,
date) under :data:`CONTEXT_META_KEY`. On resume the current system prompt replaces any stored
one, and when the context differs the model gets a ``<system-reminder>`` with the differences
before the next prompt, so it does not act on a stale model name, path or tool. A snapshot
without that record (saved by an older version or another client) is compared on what its
newest run log's header says: the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..llm.messages import TextPart, context_block

CONTEXT_META_KEY = "codelia_context"


def context_record(*, model: str, root: str, tools: list[str], date: str) -> dict[str, Any]:
    return {"model": model, "root": root, "tools": sorted(tools), "date": date}


def context_from_run_headers(headers: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """What the newest run log header (``headers`` newest first) tells of a snapshot's context:
    its model, for a snapshot saved without a context record."""
    for header in headers:
        model = header.get("model")
        name = model.get("name") if isinstance(model, dict) else None
        if isinstance(name, str) and name:
            return {"model": name}
    return None


def change_reminder(saved: Any, current: dict[str, Any]) -> TextPart | None:
    """The ``<system-reminder>`` context block listing what changed, or None when nothing did
    (or nothing is known of the saved context). Only what ``saved`` records is compared."""
    if not isinstance(saved, dict):
        return None
    changes: list[str] = []
    if "model" in saved and saved["model"] != current["model"]:
        changes.append(f"- The model is now {current['model']} (was {saved['model']}).")
    if "root" in saved and saved["root"] != current["root"]:
        changes.append(
            f"- The sandbox root is now {current['root']} (was {saved['root']}); "
            "paths from earlier in the conversation may point elsewhere."
        )
    if "tools" in saved:
        before = set(saved["tools"] or [])
        now = set(current["tools"])
        if now - before:
            changes.append(f"- Tools added: {', '.join(sorted(now - before))}.")
        if before - now:
            removed = ", ".join(sorted(before - now))
            changes.append(f"- Tools removed (do not call them): {removed}.")
    if "date" in saved and saved["date"] != current["date"]:
        changes.append(f"- Today is {current['date']} (the session was saved {saved['date']}).")
    if not changes:
        return None
    return context_block(
        "system-reminder", "This session was resumed. Since it was saved:\n" + "\n".join(changes)
    )
