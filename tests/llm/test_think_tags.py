"""ThinkTagSplitter: inline <think> reasoning split from the answer, delta by delta."""

from __future__ import annotations

import pytest

from jupyter_codelia.llm.openai._think_tags import ThinkTagSplitter

REPLY = "  <think>\nLet me add: 2+2=4. </thi is not a tag.\n</think>\n\nIt is **4**."


def split(pieces: list[str], *, opened: bool = False) -> tuple[str, str, list[str]]:
    splitter = ThinkTagSplitter(opened=opened)
    texts: list[str] = []
    thoughts: list[str] = []
    for piece in pieces:
        text, reasoning = splitter.feed(piece)
        texts.append(text)
        thoughts.append(reasoning)
    text, reasoning = splitter.flush()
    texts.append(text)
    thoughts.append(reasoning)
    return "".join(texts), "".join(thoughts), texts


@pytest.mark.parametrize("at", range(len(REPLY) + 1))
def test_the_tags_are_found_wherever_the_stream_splits_them(at: int) -> None:
    text, reasoning, _ = split([REPLY[:at], REPLY[at:]])
    assert (text, reasoning) == ("It is **4**.", "\nLet me add: 2+2=4. </thi is not a tag.\n")


def test_one_character_per_delta_and_no_answer_text_is_ever_a_tag() -> None:
    text, reasoning, texts = split(list(REPLY))
    assert text == "It is **4**."
    assert reasoning == "\nLet me add: 2+2=4. </thi is not a tag.\n"
    assert not any("<" in t for t in texts)


def test_a_plain_answer_passes_through_at_once_and_later_tags_are_the_answers() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("Use ") == ("Use ", "")
    assert not splitter.splitting
    assert splitter.feed("<think> tags") == ("<think> tags", "")
    assert split(["<", "b>bold</b>"])[:2] == ("<b>bold</b>", "")
    assert split(["<thi"])[:2] == ("<thi", "")  # ended before it could be a tag


def test_a_template_opened_tag_makes_the_start_reasoning_until_the_close() -> None:
    assert split(["Okay, 4.", "</think>", "\n\n4."], opened=True)[:2] == ("4.", "Okay, 4.")
    # The model wrote the opening tag itself after all.
    assert split(["<think>Okay.</think>4."], opened=True)[:2] == ("4.", "Okay.")
    # Cut off while still thinking: all of it is reasoning.
    assert split(["Hmm, let me", " think abo"], opened=True)[:2] == ("", "Hmm, let me think abo")
