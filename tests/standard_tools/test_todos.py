"""The todo tools: formats, business rules, events and persistence."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

from jupyter_codelia.agent.events import TodosUpdatedEvent, event_to_json
from jupyter_codelia.standard_tools.todos import (
    TODO_SESSION_KEY,
    TodoStore,
    format_read,
    normalize_todo_items,
    slug,
    todo_tools,
)
from jupyter_codelia.tools import FunctionTool, ToolContext, ToolInputError


class Harness:
    def __init__(self, session: str | None = "session-1") -> None:
        self.store = TodoStore()
        self.session: str | None = session
        self.events: list[Any] = []
        self.tools: dict[str, FunctionTool] = {
            t.name: t for t in todo_tools(self.store, lambda: self.session)
        }

    async def call(self, name: str, args: dict[str, Any] | None = None) -> str:
        ctx = ToolContext(emit=self.events.append)
        result = await self.tools[name].execute_raw(json.dumps(args or {}), ctx)
        assert result.type == "text"
        return str(result.text)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def item(content: str, status: str = "pending", **extra: Any) -> dict[str, Any]:
    return {"content": content, "status": status, **extra}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Write the Tests", "write-the-tests"),
        ("  a   b\tc  ", "a-b-c"),
        ("Fix bug #12 (urgent)!", "fix-bug-12-urgent"),
        ("--._x_.--", "x"),
        ("v1.2_final", "v1.2_final"),
        ("日本語のタスク", "todo"),
        ("", "todo"),
        ("a -- b", "a-b"),
    ],
)
def test_slug(text: str, expected: str) -> None:
    assert slug(text) == expected


def test_normalize_fills_content_ids_priorities_and_drops_blank_optionals() -> None:
    items = normalize_todo_items(
        [
            {"content": "  Same  ", "status": "pending", "priority": 9, "notes": "  "},
            {"content": "Same", "status": "completed", "priority": 0, "activeForm": " Doing "},
            {"content": "   ", "status": "pending", "priority": 2.5},
            {"id": "Custom ID", "content": "x", "status": "in_progress", "priority": 2},
        ]
    )
    assert items == [
        {"id": "same", "content": "Same", "status": "pending", "priority": 5},
        {
            "id": "same-2",
            "content": "Same",
            "status": "completed",
            "priority": 1,
            "activeForm": "Doing",
        },
        {"id": "todo-3", "content": "Todo 3", "status": "pending", "priority": 3},
        {"id": "custom-id", "content": "x", "status": "in_progress", "priority": 2},
    ]


@pytest.mark.asyncio
async def test_new_then_read_formats_in_stored_order() -> None:
    h = Harness()
    out = await h.call(
        "todo_new",
        {
            "todos": [
                item("Done first", "completed", priority=5),
                item("Write code", "in_progress", activeForm="Writing code", notes="secret"),
                item("Ship it", priority=1),
            ]
        },
    )
    assert out == (
        "Updated todos (new): 1 pending, 1 in progress, 1 completed. Next: [write-code].\n"
        "Todo plan:\n"
        "1. [x] [done-first] (p5) Done first\n"
        "2. [>] [write-code] (p3) Writing code\n"
        "3. [ ] [ship-it] (p1) Ship it\n"
        "Summary: 1 pending, 1 in progress, 1 completed\n"
        "Next: [write-code]"
    )
    assert "secret" not in out
    assert await h.call("todo_read") == (
        "Todo plan:\n"
        "1. [x] [done-first] (p5) Done first\n"
        "2. [>] [write-code] (p3) Writing code\n"
        "3. [ ] [ship-it] (p1) Ship it\n"
        "Summary: 1 pending, 1 in progress, 1 completed\n"
        "Next: [write-code]"
    )


@pytest.mark.asyncio
async def test_read_empty_and_next_falls_back_to_first_pending_ignoring_priority() -> None:
    h = Harness()
    assert await h.call("todo_read") == "Todo list is empty"
    await h.call("todo_new", {"todos": [item("Low", priority=5), item("High", priority=1)]})
    assert (await h.call("todo_read")).endswith("Next: [low]")
    await h.call("todo_patch", {"updates": [{"id": "low", "status": "completed"}]})
    await h.call("todo_patch", {"updates": [{"id": "high", "status": "completed"}]})
    out = await h.call("todo_read")
    assert out.endswith("Summary: 0 pending, 0 in progress, 2 completed\nNext: none")


@pytest.mark.asyncio
async def test_append_keeps_existing_ids_and_suffixes_newcomers() -> None:
    h = Harness()
    await h.call("todo_new", {"todos": [item("Test")]})
    out = await h.call("todo_append", {"todos": [item("Test"), item("Other", id="test")]})
    assert out.splitlines()[0] == (
        "Updated todos (append): 3 pending, 0 in progress, 0 completed. Next: [test]."
    )
    assert [t["id"] for t in h.store.get("session-1")] == ["test", "test-2", "test-3"]


@pytest.mark.asyncio
async def test_patch_updates_fields_removes_and_keeps_ids() -> None:
    h = Harness()
    await h.call(
        "todo_new",
        {"todos": [item("Alpha", notes="n1", activeForm="Doing alpha"), item("Beta")]},
    )
    out = await h.call(
        "todo_patch",
        {
            "updates": [
                {"id": "Alpha", "content": "Alpha renamed", "status": "in_progress", "notes": ""},
                {"id": "beta", "remove": True},
            ]
        },
    )
    assert out.splitlines()[0] == (
        "Updated todos (patch): 0 pending, 1 in progress, 0 completed. Next: [alpha]."
    )
    assert h.store.get("session-1") == [
        {
            "id": "alpha",
            "content": "Alpha renamed",
            "status": "in_progress",
            "priority": 3,
            "activeForm": "Doing alpha",
        }
    ]
    await h.call("todo_patch", {"updates": [{"id": "alpha", "activeForm": "", "priority": 1}]})
    assert "1. [>] [alpha] (p1) Alpha renamed" in await h.call("todo_read")


@pytest.mark.asyncio
async def test_patch_unknown_ids_is_refused_with_the_spec_text() -> None:
    h = Harness()
    await h.call("todo_new", {"todos": [item("One"), item("Two")]})
    before = h.store.get("session-1")
    h.events.clear()
    out = await h.call(
        "todo_patch",
        {"updates": [{"id": "ghost"}, {"id": "one", "status": "completed"}, {"id": "Ghost"}]},
    )
    assert out == (
        "Patch failed: unknown todo id(s): ghost. Existing id(s): one, two. "
        "Run todo_read to inspect the current plan before patching."
    )
    assert h.store.get("session-1") == before
    assert h.events == []


@pytest.mark.asyncio
async def test_patch_on_empty_list_lists_none() -> None:
    h = Harness()
    out = await h.call("todo_patch", {"updates": [{"id": "x"}]})
    assert out == (
        "Patch failed: unknown todo id(s): x. Existing id(s): (none). "
        "Run todo_read to inspect the current plan before patching."
    )


@pytest.mark.asyncio
async def test_two_in_progress_is_refused_and_state_kept() -> None:
    h = Harness()
    await h.call("todo_new", {"todos": [item("A", "in_progress"), item("B")]})
    before = h.store.get("session-1")
    out = await h.call("todo_patch", {"updates": [{"id": "b", "status": "in_progress"}]})
    assert out == (
        "Invalid todo state: 2 items are in_progress (a, b). Keep at most one item in_progress "
        "so tasks can be handled one-by-one."
    )
    assert h.store.get("session-1") == before
    out = await h.call("todo_append", {"todos": [item("C", "in_progress")]})
    assert out.startswith("Invalid todo state: 2 items are in_progress (a, c).")
    out = await h.call("todo_new", {"todos": [item("X", "in_progress")] * 3})
    assert out.startswith("Invalid todo state: 3 items are in_progress (x, x-2, x-3).")
    assert h.store.get("session-1") == before


@pytest.mark.asyncio
async def test_clear_returns_only_the_head_line_and_deletes_the_entry() -> None:
    h = Harness()
    await h.call("todo_new", {"todos": [item("A")]})
    out = await h.call("todo_clear")
    assert out == "Updated todos (clear): 0 pending, 0 in progress, 0 completed. Next: none."
    assert h.store.export_meta("session-1") is None
    assert await h.call("todo_read") == "Todo list is empty"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("todo_clear", {"todos": []}, 'Unrecognized key: "todos"'),
        ("todo_clear", {"updates": []}, 'Unrecognized key: "updates"'),
        ("todo_read", {"verbose": True}, 'Unrecognized key: "verbose"'),
        ("todo_new", {"todos": []}, "todos: List should have at least 1 item"),
        ("todo_new", {}, 'missing required field "todos"'),
        ("todo_new", {"todos": [{"content": "x"}]}, 'missing required field "todos.0.status"'),
        ("todo_new", {"todos": [{"content": "", "status": "pending"}]}, "todos.0.content"),
        ("todo_new", {"todos": [{"content": "x", "status": "doing"}]}, "todos.0.status"),
        ("todo_new", {"todos": [item("x", priority=6)]}, "todos.0.priority"),
        ("todo_append", {"todos": [item("x", title="t")]}, 'Unrecognized key: "todos.0.title"'),
        ("todo_patch", {"updates": [{"status": "completed"}]}, "updates.0.id"),
        ("todo_patch", {"updates": [{"id": "a", "priority": 0}]}, "updates.0.priority"),
    ],
)
async def test_schema_violations_raise_clear_errors(
    tool: str, args: dict[str, Any], message: str
) -> None:
    h = Harness()
    with pytest.raises(ToolInputError) as info:
        await h.call(tool, args)
    assert f"Tool input validation failed for {tool}: " in str(info.value)
    assert message in str(info.value)


def test_schemas_are_strict_draft7_objects() -> None:
    h = Harness()
    for tool in h.tools.values():
        schema = tool.definition.parameters
        jsonschema.Draft7Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert not {"anyOf", "oneOf", "allOf", "enum", "not"} & schema.keys()
    patch_item = h.tools["todo_patch"].definition.parameters["properties"]["updates"]["items"]
    assert patch_item["required"] == ["id"]
    new_item = h.tools["todo_new"].definition.parameters["properties"]["todos"]["items"]
    assert "activeForm" in new_item["properties"]
    assert sorted(new_item["required"]) == ["content", "status"]


@pytest.mark.asyncio
async def test_every_change_sends_a_todos_updated_event() -> None:
    h = Harness()
    await h.call("todo_new", {"todos": [item("A", "in_progress", activeForm="Doing A")]})
    await h.call("todo_append", {"todos": [item("B")]})
    await h.call("todo_patch", {"updates": [{"id": "a", "status": "completed"}]})
    await h.call("todo_read")
    await h.call("todo_clear")
    assert [type(e) for e in h.events] == [TodosUpdatedEvent] * 4
    first = event_to_json(h.events[0])
    assert first == {
        "type": "todos.updated",
        "session_id": "session-1",
        "todos": [
            {
                "id": "a",
                "content": "A",
                "status": "in_progress",
                "priority": 3,
                "activeForm": "Doing A",
            }
        ],
    }
    assert [t.id for t in h.events[2].todos] == ["a", "b"]
    assert h.events[3].todos == []


@pytest.mark.asyncio
async def test_sessions_are_isolated_and_none_uses_the_fallback_scope() -> None:
    h = Harness(session="one")
    await h.call("todo_new", {"todos": [item("In one")]})
    h.session = "two"
    assert await h.call("todo_read") == "Todo list is empty"
    h.session = None
    await h.call("todo_new", {"todos": [item("No session")]})
    assert h.store.get("  ") == h.store.get(None)
    assert h.store.get(h.store.fallback_session_id)[0]["id"] == "no-session"
    assert TodoStore().get(None) == []
    h.session = " one "
    assert "In one" in await h.call("todo_read")


def test_read_warns_about_several_in_progress_items_after_restore() -> None:
    store = TodoStore()
    store.restore_meta("s", [item("A", "in_progress"), item("B", "in_progress")])
    text = "\n".join(
        [
            "Todo plan:",
            "1. [>] [a] (p3) A",
            "2. [>] [b] (p3) B",
            "Summary: 0 pending, 2 in progress, 0 completed",
            "Next: [a]",
            "Warning: 2 items are in_progress (expected at most 1).",
        ]
    )
    assert format_read(store.get("s")) == text


def test_restore_is_tolerant_of_bad_entries() -> None:
    store = TodoStore()
    store.restore_meta(
        "s",
        [
            "not an object",
            {"content": "bad status", "status": "blocked"},
            {"content": 42, "status": "pending", "id": 7, "notes": ["x"], "activeForm": None},
            {"content": "ok", "status": "completed", "priority": "high", "notes": "kept"},
            {"content": "prio", "status": "pending", "priority": True},
            {"content": "float", "status": "pending", "priority": 2.0},
        ],
    )
    assert store.get("s") == [
        {"id": "todo-1", "content": "Todo 1", "status": "pending", "priority": 3},
        {"id": "ok", "content": "ok", "status": "completed", "priority": 3, "notes": "kept"},
        {"id": "prio", "content": "prio", "status": "pending", "priority": 3},
        {"id": "float", "content": "float", "status": "pending", "priority": 2},
    ]
    store.restore_meta("s", {"not": "a list"})
    assert store.get("s") == []
    store.restore_meta("s", [item("x")])
    store.restore_meta("s", None)
    assert store.export_meta("s") is None


_RESTORE_SCRIPT = """
import json, sys
from jupyter_codelia.standard_tools.todos import TODO_SESSION_KEY, TodoStore, format_read
meta = json.loads(sys.stdin.read())
store = TodoStore()
store.restore_meta("resumed", meta.get(TODO_SESSION_KEY))
print(json.dumps({"items": store.get("resumed"), "read": format_read(store.get("resumed"))}))
"""


def test_meta_round_trip_through_json_in_a_fresh_process() -> None:
    h = Harness()
    run(
        h.call(
            "todo_new",
            {
                "todos": [
                    item("Plan", "completed", notes="why: because"),
                    item("Build it", "in_progress", activeForm="Building", priority=1),
                    item("Ünïcödé task ✓", priority=4),
                ]
            },
        )
    )
    meta: dict[str, Any] = {"other": {"keep": True}}
    exported = h.store.export_meta("session-1")
    assert exported is not None
    meta[TODO_SESSION_KEY] = exported
    snapshot = json.dumps(meta)
    proc = subprocess.run(
        [sys.executable, "-c", _RESTORE_SCRIPT],
        input=snapshot,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    restored = json.loads(proc.stdout)
    assert restored["items"] == h.store.get("session-1")
    assert restored["read"] == run(h.call("todo_read"))
    assert json.loads(snapshot)["other"] == {"keep": True}
