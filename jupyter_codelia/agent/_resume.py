"""What changed between a saved session and the agent resuming it, told to the model.

Every snapshot records the context the conversation ran in (model, sandbox root, tool names,
date) under :data:`CONTEXT_META_KEY`. On resume the current system prompt replaces any stored
one, and when the context differs the model gets a ``<system-reminder>`` with the differences
before the next prompt, so it does not act on a stale model name, path or tool.
"""

from __future__ import annotations

from typing import Any

from ..llm.messages import TextPart, context_block

CONTEXT_META_KEY = "codelia_context"


def context_record(*, model: str, root: str, tools: list[str], date: str) -> dict[str, Any]:
    return {"model": model, "root": root, "tools": sorted(tools), "date": date}


def change_reminder(saved: Any, current: dict[str, Any]) -> TextPart | None:
    """The ``<system-reminder>`` context block listing what changed, or None when nothing did
    (or the snapshot predates these records)."""
    if not isinstance(saved, dict):
        return None
    changes: list[str] = []
    if saved.get("model") != current["model"]:
        changes.append(f"- The model is now {current['model']} (was {saved.get('model')}).")
    if saved.get("root") != current["root"]:
        changes.append(
            f"- The sandbox root is now {current['root']} (was {saved.get('root')}); "
            "paths from earlier in the conversation may point elsewhere."
        )
    before = set(saved.get("tools") or [])
    now = set(current["tools"])
    if now - before:
        changes.append(f"- Tools added: {', '.join(sorted(now - before))}.")
    if before - now:
        changes.append(f"- Tools removed (do not call them): {', '.join(sorted(before - now))}.")
    if saved.get("date") != current["date"]:
        changes.append(f"- Today is {current['date']} (the session was saved {saved.get('date')}).")
    if not changes:
        return None
    return context_block(
        "system-reminder", "This session was resumed. Since it was saved:\n" + "\n".join(changes)
    )
