"""History repair, and the agent's incremental form of it that checks only what was added."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_codelia.agent import repair_history
from jupyter_codelia.agent._history import HistoryRepair
from jupyter_codelia.llm.messages import (
    AssistantMessage,
    FunctionCall,
    ToolCall,
    ToolMessage,
    UserMessage,
)


def _call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name="add", arguments="{}"))


def _message(kind: str, n: int) -> Any:
    if kind == "user":
        return UserMessage(content=f"prompt {n}")
    if kind == "text":
        return AssistantMessage(content=f"answer {n}")
    if kind == "empty":
        return AssistantMessage(content="")
    if kind == "calls":
        return AssistantMessage(content=None, tool_calls=[_call(f"c{n}"), _call(f"d{n}")])
    if kind == "result":  # answers the latest "calls" message's first call, if any
        return ToolMessage(tool_call_id=f"c{n - 1}", tool_name="add", content="3")
    return ToolMessage(tool_call_id=f"d{n - 2}", tool_name="add", content="4")


def test_a_dangling_call_and_a_doubled_prompt_are_repaired() -> None:
    history = [
        UserMessage(content="add"),
        AssistantMessage(content=None, tool_calls=[_call("a"), _call("b")]),
        ToolMessage(tool_call_id="a", tool_name="add", content="3"),
        UserMessage(content="again"),
    ]
    repaired = repair_history(history)
    assert [type(m).__name__ for m in repaired] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "UserMessage",
    ]
    assert [c.id for c in repaired[1].tool_calls] == ["a"]


def test_the_incremental_repair_sees_a_change_in_the_part_it_checked_before() -> None:
    repair = HistoryRepair()
    history = repair([UserMessage(content="hi"), AssistantMessage(content="hello")])
    assert len(history) == 2
    # The already checked part is replaced by a broken one of the same length.
    broken = [UserMessage(content="hi"), AssistantMessage(content=""), UserMessage(content="x")]
    assert repair(broken) == [UserMessage(content="hi\n\nx")]  # emptied turn gone, merged


def test_appending_to_the_list_it_returned_does_not_hide_the_new_messages() -> None:
    repair = HistoryRepair()
    history = repair([UserMessage(content="hi")])
    history.append(AssistantMessage(content=None, tool_calls=[_call("x")]))  # never answered
    repaired = repair(history)
    assert repaired == [UserMessage(content="hi")]


KINDS = st.sampled_from(["user", "text", "empty", "calls", "result", "second"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(KINDS, max_size=6), max_size=8))
def test_incremental_repair_equals_a_full_repair_at_every_step(steps: list[list[str]]) -> None:
    """Turn by turn, as the agent does: messages are appended to the repaired history, which is
    repaired again; both forms agree every time."""
    repair = HistoryRepair()
    full: list[Any] = []
    incremental: list[Any] = []
    n = 0
    for step in steps:
        added = []
        for kind in step:
            n += 1
            added.append(_message(kind, n))
        full = repair_history([*full, *added])
        incremental = repair([*incremental, *added])
        assert incremental == full
