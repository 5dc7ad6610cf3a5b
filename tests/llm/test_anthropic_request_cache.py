"""The request cache: a history's unchanged start is reused, and the request is byte-identical
to a conversion from scratch however the history changed since the last request."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_codelia.llm import (
    AssistantMessage,
    FunctionToolDefinition,
    ReasoningMessage,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.llm.anthropic._request import (
    MessagesCache,
    add_cache_breakpoints,
    collapse_plain_text,
    to_anthropic_messages,
)
from jupyter_codelia.llm.messages import FunctionCall

READ = FunctionToolDefinition(name="read", description="Read", parameters={"type": "object"})
THINKING = {"type": "thinking", "thinking": "hmm", "signature": "sig"}


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(
        content=None,
        tool_calls=[
            ToolCall(id=i, function=FunctionCall(name="read", arguments='{"p": 1}')) for i in ids
        ],
    )


def result(call_id: str, content: str = "ok") -> ToolMessage:
    return ToolMessage(tool_call_id=call_id, tool_name="read", content=content)


def wire(value: Any) -> str:
    return json.dumps(value, sort_keys=False)


class Checker:
    """One long-lived chat (its cache warm from every earlier request) against a fresh one."""

    def __init__(self) -> None:
        self.chat = AnthropicChat(api_key="k")
        self.cache = MessagesCache()
        self.requests = 0

    def check(self, history: list[Any]) -> dict[str, Any]:
        cached = self.chat.build_request(list(history), tools=[READ])
        fresh = AnthropicChat(api_key="k").build_request(list(history), tools=[READ])
        assert wire(cached) == wire(fresh)
        # The reference order: breakpoints on the uncollapsed turns, then collapsing.
        reference = to_anthropic_messages(history, replay_thinking=True)
        add_cache_breakpoints(None, [], reference)
        assert wire(cached["messages"]) == wire(collapse_plain_text(reference))
        for replay in (True, False):
            for collapse in (True, False):
                options = {"replay_thinking": replay, "collapse": collapse}
                fresh_messages = wire(to_anthropic_messages(history, **options))
                assert wire(to_anthropic_messages(history, cache=self.cache, **options)) == (
                    fresh_messages
                )
        self.requests += 1
        return cached


def test_an_agent_loop_reuses_the_start_and_matches_a_fresh_conversion() -> None:
    checker = Checker()
    history: list[Any] = [SystemMessage(content="be brief"), UserMessage(content="q1")]
    checker.check(history)
    for step in range(4):
        history += [ReasoningMessage(content="hmm", raw_item=THINKING), calls(f"c{step}")]
        checker.check(history)  # the last call is still unanswered: dropped from the request
        history.append(result(f"c{step}"))
        request = checker.check(history)  # its result arrived: the call is back
        assert request["messages"][-2]["content"][-1]["id"] == f"c{step}"
    history += [AssistantMessage(content="done"), UserMessage(content="q2")]
    checker.check(history)
    cache = checker.chat._messages_cache
    # Everything up to the last user turn comes from the cache: only it is new.
    seam = cache.reusable([*history, AssistantMessage(content="a")], (True, True))
    assert seam[0] == len(history)


def test_a_tool_result_for_the_last_assistant_turn_and_parallel_results() -> None:
    checker = Checker()
    history: list[Any] = [UserMessage(content="q"), calls("a", "b")]
    checker.check(history)
    history.append(result("a"))
    request = checker.check(history)  # b still unanswered: only a's pair goes
    assert [b["id"] for b in request["messages"][1]["content"]] == ["a"]
    history.append(result("b"))
    request = checker.check(history)
    assert [b["tool_use_id"] for b in request["messages"][2]["content"]] == ["a", "b"]


def test_a_history_edited_in_place_is_converted_again_where_it_changed() -> None:
    checker = Checker()
    history: list[Any] = [UserMessage(content="q")]
    for step in range(5):
        history += [calls(f"c{step}"), result(f"c{step}", "x" * 50)]
        history.append(UserMessage(content=f"u{step}"))
    checker.check(history)
    history[5] = history[5].model_copy(update={"content": "[tool output trimmed]", "trimmed": True})
    checker.check(history)
    del history[7:10]  # a whole exchange removed
    checker.check(history)
    history.insert(2, UserMessage(content="inserted"))  # now orphans the first call's result
    checker.check(history)
    history[0] = UserMessage(content=[TextPart(text="parts"), TextPart(text="")])
    checker.check(history)
    history.pop()
    checker.check(history)


def test_compaction_replacing_the_history_and_a_resumed_conversation() -> None:
    checker = Checker()
    history: list[Any] = [UserMessage(content=f"m{i}") for i in range(20)]
    checker.check(history)
    compacted = [UserMessage(content="summary"), *history[-3:]]
    checker.check(compacted)
    checker.check([*compacted, AssistantMessage(content="a"), UserMessage(content="b")])
    checker.check(history)  # back to the old list: same objects again, a clean conversion


def test_reasoning_replay_across_requests() -> None:
    checker = Checker()
    history: list[Any] = [UserMessage(content="q"), calls("a"), result("a")]
    checker.check(history)
    history.append(ReasoningMessage(content="hmm", raw_item=THINKING))
    checker.check(history)  # pending thinking with no turn yet: not sent
    history.append(calls("b"))
    request = checker.check(history)
    # b unanswered: its turn, thinking and all, is dropped until its result arrives.
    assert request["messages"][-1]["content"][0]["type"] == "tool_result"
    history += [result("b"), ReasoningMessage(content="no raw item"), AssistantMessage(content="x")]
    request = checker.check(history)
    assert [b["type"] for b in request["messages"][-3]["content"]] == ["thinking", "tool_use"]
    assert request["messages"][-1]["content"] == "x"
    history.append(AssistantMessage(content="more"))  # merges into the previous assistant turn
    checker.check(history)


# --- any history, any edit ----------------------------------------------------------------

IDS = ["a", "b", "c"]
message = st.one_of(
    st.sampled_from(["hi", ""]).map(lambda text: UserMessage(content=text)),
    st.just(SystemMessage(content="sys")),
    st.sampled_from(["ok", ""]).map(lambda text: AssistantMessage(content=text)),
    st.lists(st.sampled_from(IDS), min_size=1, max_size=2, unique=True).map(
        lambda ids: calls(*ids)
    ),
    st.sampled_from(IDS).map(result),
    st.sampled_from([THINKING, None]).map(lambda raw: ReasoningMessage(content="r", raw_item=raw)),
)
edit = st.one_of(
    st.tuples(st.just("append"), st.lists(message, min_size=1, max_size=4)),
    st.tuples(st.just("replace"), st.integers(0, 30), message),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("truncate"), st.integers(0, 30)),
    st.tuples(st.just("restart"), st.lists(message, max_size=6)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.lists(message, max_size=12), edits=st.lists(edit, max_size=8))
def test_any_sequence_of_edits_gives_the_fresh_request(start: list[Any], edits: list[Any]) -> None:
    checker = Checker()
    history = list(start)
    checker.check(history)
    for kind, *args in edits:
        if kind == "append":
            history.extend(args[0])
        elif kind == "replace" and history:
            history[args[0] % len(history)] = args[1]
        elif kind == "delete" and history:
            del history[args[0] % len(history)]
        elif kind == "truncate":
            del history[args[0] :]
        elif kind == "restart":
            history = list(args[0])
        checker.check(history)
