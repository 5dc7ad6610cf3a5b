"""The planning tools: ``todo_read``, ``todo_new``, ``todo_append``, ``todo_patch``, ``todo_clear``.

Owns the todo data model: slug ids, normalization, the one-``in_progress`` rule,
the text formats the model reads, the per-session :class:`TodoStore`, its persistence in the
session snapshot's ``meta["codelia_todos"]`` and the ``todos.updated`` event sent after every
change so front ends can draw the list.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._redact import redact_secrets
from ..tools import FunctionTool, ToolContext, ToolRisk, define_tool
from ..tools.events import TodoItemView, TodosUpdatedEvent

TODO_SESSION_KEY = "codelia_todos"
"""The key of the todo list in a session snapshot's ``meta``."""

TodoStatus = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed")
DEFAULT_PRIORITY = 3
_SYMBOLS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}

_WHITESPACE_RUN = re.compile(r"\s+")
_OUTSIDE_SLUG = re.compile(r"[^a-z0-9._-]+")
_DASH_RUN = re.compile(r"-{2,}")


def slug(text: str) -> str:
    """A stable id for ``text``: lowercase ``[a-z0-9._-]``, dashes for everything else.

    Secrets are masked first: the id is case-folded, so masking what leaves the agent later
    would no longer recognise a token inside it.
    """
    value = _WHITESPACE_RUN.sub("-", redact_secrets(text).strip().lower())
    value = _DASH_RUN.sub("-", _OUTSIDE_SLUG.sub("-", value))
    return value.strip("-_.") or "todo"


def _priority(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return DEFAULT_PRIORITY
    if isinstance(value, float) and not value.is_integer():
        return DEFAULT_PRIORITY
    return min(5, max(1, int(value)))


def normalize_todo_items(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Normalize raw item dicts into stored items; earlier items keep their ids."""
    used: set[str] = set()
    result: list[dict[str, Any]] = []
    for index, raw in enumerate(items):
        content = raw.get("content")
        content = content.strip() if isinstance(content, str) else ""
        if not content:
            content = f"Todo {index + 1}"
        given_id = raw.get("id")
        base = slug(given_id) if isinstance(given_id, str) and given_id.strip() else slug(content)
        item_id, suffix = base, 2
        while item_id in used:
            item_id, suffix = f"{base}-{suffix}", suffix + 1
        used.add(item_id)
        item: dict[str, Any] = {
            "id": item_id,
            "content": content,
            "status": raw.get("status") if raw.get("status") in STATUSES else "pending",
            "priority": _priority(raw.get("priority")),
        }
        for key in ("notes", "activeForm"):
            value = raw.get(key)
            if isinstance(value, str) and value.strip():
                item[key] = value.strip()
        result.append(item)
    return result


class TodoStore:
    """Todo lists per session id; thread-safe, reads return normalized copies.

    ``None`` (or a blank id) means "no agent session yet" and maps to this store's own random
    fallback scope, so two stores never share todos by accident.
    """

    def __init__(self) -> None:
        self._lists: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.RLock()
        self.fallback_session_id = secrets.token_hex(4)

    def _key(self, session_id: str | None) -> str:
        if session_id is not None and session_id.strip():
            return session_id.strip()
        return self.fallback_session_id

    def get(self, session_id: str | None) -> list[dict[str, Any]]:
        with self._lock:
            return normalize_todo_items(self._lists.get(self._key(session_id), []))

    def set(self, session_id: str | None, items: list[dict[str, Any]]) -> None:
        """Store ``items`` (normalized); an empty list deletes the session's entry."""
        normalized = normalize_todo_items(items)
        with self._lock:
            if normalized:
                self._lists[self._key(session_id)] = normalized
            else:
                self._lists.pop(self._key(session_id), None)

    def clear(self, session_id: str | None) -> None:
        self.set(session_id, [])

    def export_meta(self, session_id: str | None) -> list[dict[str, Any]] | None:
        """The value for ``meta["codelia_todos"]``; ``None`` means "remove the key"."""
        return self.get(session_id) or None

    def restore_meta(self, session_id: str | None, value: Any) -> None:
        """Load ``meta["codelia_todos"]`` tolerantly: bad entries are skipped."""
        entries = value if isinstance(value, list) else []
        cleaned: list[dict[str, Any]] = []
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("status") not in STATUSES:
                continue
            item: dict[str, Any] = {"status": entry["status"]}
            content = entry.get("content")
            item["content"] = content if isinstance(content, str) else ""
            for key in ("id", "notes", "activeForm"):
                if isinstance(entry.get(key), str):
                    item[key] = entry[key]
            item["priority"] = entry.get("priority")
            cleaned.append(item)
        self.set(session_id, cleaned)

    def mutate(
        self,
        session_id: str | None,
        compute: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | str],
    ) -> tuple[list[dict[str, Any]] | None, str | None]:
        """Atomically replace the list with ``compute(current)``.

        ``compute`` returns the next raw list, or a text explaining why nothing changed. Returns
        ``(stored list, None)`` on success and ``(None, refusal text)`` otherwise.
        """
        with self._lock:
            outcome = compute(self.get(session_id))
            if isinstance(outcome, str):
                return None, outcome
            next_items = normalize_todo_items(outcome)
            in_progress = [item["id"] for item in next_items if item["status"] == "in_progress"]
            if len(in_progress) > 1:
                return None, (
                    f"Invalid todo state: {len(in_progress)} items are in_progress "
                    f"({', '.join(in_progress)}). Keep at most one item in_progress so tasks can "
                    "be handled one-by-one."
                )
            self.set(session_id, next_items)
            return next_items, None


# --- output formats ----------------------------------------------------------------


def _counts(items: list[dict[str, Any]]) -> str:
    pending = sum(1 for item in items if item["status"] == "pending")
    active = sum(1 for item in items if item["status"] == "in_progress")
    done = sum(1 for item in items if item["status"] == "completed")
    return f"{pending} pending, {active} in progress, {done} completed"


def _next_id(items: list[dict[str, Any]]) -> str | None:
    for status in ("in_progress", "pending"):
        for item in items:
            if item["status"] == status:
                return str(item["id"])
    return None


def _plan_lines(items: list[dict[str, Any]]) -> list[str]:
    lines = ["Todo plan:"]
    for position, item in enumerate(items, start=1):
        label = item["content"]
        if item["status"] == "in_progress" and item.get("activeForm"):
            label = item["activeForm"]
        symbol = _SYMBOLS[item["status"]]
        lines.append(f"{position}. {symbol} [{item['id']}] (p{item['priority']}) {label}")
    next_id = _next_id(items)
    lines.append(f"Summary: {_counts(items)}")
    lines.append(f"Next: [{next_id}]" if next_id else "Next: none")
    return lines


def format_read(items: list[dict[str, Any]]) -> str:
    """What ``todo_read`` returns for ``items``."""
    if not items:
        return "Todo list is empty"
    lines = _plan_lines(items)
    active = sum(1 for item in items if item["status"] == "in_progress")
    if active > 1:
        lines.append(f"Warning: {active} items are in_progress (expected at most 1).")
    return "\n".join(lines)


def format_mutation(mode: str, items: list[dict[str, Any]]) -> str:
    """What a successful ``todo_<mode>`` returns for the resulting ``items``."""
    next_id = _next_id(items)
    next_text = f"Next: [{next_id}]." if next_id else "Next: none."
    head = f"Updated todos ({mode}): {_counts(items)}. {next_text}"
    if not items:
        return head
    return "\n".join([head, *_plan_lines(items)])


# --- tool inputs -------------------------------------------------------------------

_ID_DESCRIPTION = (
    "Stable id (a slug). Omit to generate one from the content; keep the existing id when "
    "replacing a known item."
)
_PRIORITY_DESCRIPTION = "1 = high ... 5 = low; default 3."
_ACTIVE_FORM_DESCRIPTION = (
    "Present-tense label shown while the item is in_progress, e.g. 'Running the tests'."
)


class TodoItemInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str | None = Field(default=None, min_length=1, description=_ID_DESCRIPTION)
    content: str = Field(min_length=1, description="What to do, imperative form.")
    status: TodoStatus
    priority: int | None = Field(default=None, ge=1, le=5, description=_PRIORITY_DESCRIPTION)
    notes: str | None = Field(default=None, description="Private notes; never shown in output.")
    active_form: str | None = Field(
        default=None, alias="activeForm", description=_ACTIVE_FORM_DESCRIPTION
    )


class TodoPatchInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(min_length=1, description="Id of the existing item to update or remove.")
    remove: bool | None = Field(default=None, description="true deletes the item.")
    content: str | None = Field(
        default=None, min_length=1, description="New content; omit to keep the current one."
    )
    status: TodoStatus | None = Field(
        default=None, description="New status; omit to keep the current one."
    )
    priority: int | None = Field(
        default=None, ge=1, le=5, description=f"{_PRIORITY_DESCRIPTION} Omit to keep."
    )
    notes: str | None = Field(
        default=None, description="New notes; omit to keep, an empty string clears them."
    )
    active_form: str | None = Field(
        default=None,
        alias="activeForm",
        description="New in-progress label; omit to keep, an empty string clears it.",
    )


class TodoListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    todos: list[TodoItemInput] = Field(min_length=1)


class TodoPatchListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    updates: list[TodoPatchInput] = Field(min_length=1)


class NoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _raw_item(item: TodoItemInput) -> dict[str, Any]:
    return item.model_dump(by_alias=True, exclude_none=True)


def _apply_patches(
    current: list[dict[str, Any]], updates: list[TodoPatchInput]
) -> list[dict[str, Any]] | str:
    ids = [slug(update.id) for update in updates]
    known = {item["id"] for item in current}
    missing = list(dict.fromkeys(item_id for item_id in ids if item_id not in known))
    if missing:
        existing = ", ".join(item["id"] for item in current) or "(none)"
        return (
            f"Patch failed: unknown todo id(s): {', '.join(missing)}. Existing id(s): {existing}. "
            "Run todo_read to inspect the current plan before patching."
        )
    items = [dict(item) for item in current]
    for item_id, update in zip(ids, updates, strict=True):
        index = next((i for i, item in enumerate(items) if item["id"] == item_id), None)
        if index is None:  # removed by an earlier update of the same call
            continue
        if update.remove:
            del items[index]
            continue
        changes = update.model_dump(by_alias=True, exclude_none=True, exclude={"id", "remove"})
        items[index].update(changes)
    return items


# --- the tools -------------------------------------------------------------------------------


def todo_tools(store: TodoStore, session_id: Callable[[], str | None]) -> list[FunctionTool]:
    """``todo_read``, ``todo_new``, ``todo_append``, ``todo_patch``, ``todo_clear`` over ``store``.

    ``session_id()`` names the current agent session (``None`` before there is one); each call
    reads it again, so switching sessions switches lists.
    """

    def mutate(
        mode: str,
        ctx: ToolContext,
        compute: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | str],
    ) -> str:
        current_session = session_id()
        stored, refusal = store.mutate(current_session, compute)
        if stored is None:
            return refusal or ""
        ctx.send(
            TodosUpdatedEvent(
                session_id=current_session,
                todos=[TodoItemView.model_validate(item) for item in stored],
            )
        )
        return format_mutation(mode, stored)

    def read(_: NoInput, ctx: ToolContext) -> str:
        return format_read(store.get(session_id()))

    def new(params: TodoListInput, ctx: ToolContext) -> str:
        return mutate("new", ctx, lambda _current: [_raw_item(t) for t in params.todos])

    def append(params: TodoListInput, ctx: ToolContext) -> str:
        return mutate("append", ctx, lambda current: current + [_raw_item(t) for t in params.todos])

    def patch(params: TodoPatchListInput, ctx: ToolContext) -> str:
        return mutate("patch", ctx, lambda current: _apply_patches(current, params.updates))

    def clear(_: NoInput, ctx: ToolContext) -> str:
        return mutate("clear", ctx, lambda _current: [])

    return [
        define_tool(
            name="todo_read",
            description=(
                "Show the current todo plan: each item's position, status, id and priority, a "
                "summary and the next actionable item."
            ),
            input=NoInput,
            execute=read,
            risk=ToolRisk(kind="agent_state"),
        ),
        define_tool(
            name="todo_new",
            description=(
                "Start or replace the todo plan with the full list of steps, in execution order. "
                "Use it for multi-step work; keep at most one item in_progress."
            ),
            input=TodoListInput,
            execute=new,
            risk=ToolRisk(kind="agent_state"),
        ),
        define_tool(
            name="todo_append",
            description="Add newly discovered tasks to the end of the current todo plan.",
            input=TodoListInput,
            execute=append,
            risk=ToolRisk(kind="agent_state"),
        ),
        define_tool(
            name="todo_patch",
            description=(
                "Update or remove todo items by id (status, content, priority, notes, "
                "activeForm). Omitted fields keep their values. Mark an item in_progress when "
                "starting it and completed as soon as it is done."
            ),
            input=TodoPatchListInput,
            execute=patch,
            risk=ToolRisk(kind="agent_state"),
        ),
        define_tool(
            name="todo_clear",
            description="Remove every item from the todo plan.",
            input=NoInput,
            execute=clear,
            risk=ToolRisk(kind="agent_state"),
        ),
    ]
