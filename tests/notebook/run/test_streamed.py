"""What a panel joining mid-reply replays of the text streamed so far (notebook/run/streamed.py)."""

from __future__ import annotations

from typing import Any

from jupyter_codelia.agent import events as ev
from jupyter_codelia.notebook.run.streamed import StreamedText, with_streamed
from jupyter_codelia.wire import event_message

RUN = "run-1"


def _deltas(streamed: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    return [(m["seq"], m["event"]["type"], m["event"]["delta"]) for m in streamed]


def test_consecutive_deltas_join_and_a_whole_block_drops_them() -> None:
    streamed = StreamedText()
    streamed.sent(ev.ReasoningDeltaEvent(delta="think ", seq=3))
    streamed.sent(ev.ReasoningDeltaEvent(delta="more", seq=4))
    streamed.sent(ev.TextDeltaEvent(delta="Hello ", seq=5))
    # A merged delta (the sink coalesces text) says where it starts.
    streamed.sent(ev.TextDeltaEvent(delta="wide world", seq=9), first_seq=6)
    assert _deltas(streamed.messages(RUN)) == [
        (4, "reasoning_delta", "think more"),
        (9, "text_delta", "Hello wide world"),
    ]
    # Usage arrives between the last delta and the whole text: it drops nothing.
    streamed.sent(
        ev.UsageEvent(
            model="m",
            input_tokens=1,
            output_tokens=1,
            seq=10,
            total_input_tokens=1,
            total_output_tokens=1,
        )
    )
    assert len(streamed.messages(RUN)) == 2
    streamed.sent(ev.TextEvent(content="Hello wide world", seq=11))
    assert _deltas(streamed.messages(RUN)) == [(4, "reasoning_delta", "think more")]
    streamed.sent(ev.ReasoningEvent(content="think more", seq=12))
    assert streamed.messages(RUN) == []


def test_a_gap_in_the_numbers_starts_a_new_stretch_and_void_text_is_dropped() -> None:
    streamed = StreamedText()
    streamed.sent(ev.TextDeltaEvent(delta="a", seq=1))
    streamed.sent(ev.TextDeltaEvent(delta="b", seq=3))  # seq 2 went elsewhere (a logged event)
    assert _deltas(streamed.messages(RUN)) == [(1, "text_delta", "a"), (3, "text_delta", "b")]
    streamed.sent(ev.TextDiscardedEvent(seq=4))
    assert streamed.messages(RUN) == []


def test_streamed_text_goes_to_its_place_by_seq() -> None:
    started = {"type": "run.started", "run_id": RUN, "prompt": "p", "source": "panel"}
    logged = [
        {"type": "run.started", "run_id": "old", "prompt": "o", "source": "panel"},
        event_message("old", 0, {"type": "final", "content": "old answer"}),
        started,
        event_message(
            RUN, 0, {"type": "step_start", "step_id": "s", "title": "t", "step_number": 1}
        ),
        event_message(RUN, 7, {"type": "usage"}),
    ]
    streamed = StreamedText()
    streamed.sent(ev.TextDeltaEvent(delta="before usage", seq=6), first_seq=1)
    streamed.sent(ev.TextDeltaEvent(delta="after", seq=9), first_seq=8)
    merged = with_streamed(logged, RUN, streamed.messages(RUN))
    assert [(m["run_id"], m.get("seq")) for m in merged] == [
        ("old", None),
        ("old", 0),
        (RUN, None),
        (RUN, 0),
        (RUN, 6),
        (RUN, 7),
        (RUN, 9),
    ]
    # A run whose log holds only its start: the text follows the start.
    only_start = with_streamed([started], RUN, streamed.messages(RUN))
    assert [m.get("seq") for m in only_start] == [None, 6, 9]
