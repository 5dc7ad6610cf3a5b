"""The cache browser widget over a real ToolOutputCacheStore in a temp directory."""

from __future__ import annotations

import io
from pathlib import Path

import ipywidgets as widgets
from PIL import Image

from jupyter_codelia.cache import EntryOrigin, ToolOutputCacheStore
from jupyter_codelia.llm.messages import ImagePart, TextPart
from jupyter_codelia.notebook.ui.cache_browser import CacheBrowser


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (5, 4), "blue").save(buffer, format="PNG")
    return buffer.getvalue()


def _store(tmp_path: Path) -> ToolOutputCacheStore:
    store = ToolOutputCacheStore(tmp_path / "cache")
    lines = "\n".join(f"line {i} {'needle' if i % 100 == 0 else 'hay'}" for i in range(1, 501))
    store.save(tool_call_id="call_text", tool_name="read", content=lines)
    store.save(tool_call_id="call_long", tool_name="python", content="a" * 50 + "XYZ" + "b" * 50)
    store.save(
        tool_call_id="call_image",
        tool_name="python",
        content=[TextPart(text="a plot"), ImagePart.from_bytes(_png(), "image/png")],
    )
    return store


def test_lists_entries_with_tool_size_and_lines(tmp_path: Path) -> None:
    browser = CacheBrowser(_store(tmp_path))
    labels = [label for label, _ in browser.entry_list.options]
    assert len(labels) == 3
    text_label = next(label for label in labels if "call_text" in label)
    assert " read " in text_label
    assert "500 lines" in text_label
    assert "KB" in text_label
    image_label = next(label for label in labels if "call_image" in label)
    assert "[images]" in image_label


def test_paging_by_offset_and_limit(tmp_path: Path) -> None:
    browser = CacheBrowser(_store(tmp_path))
    browser.limit.value = 10
    browser.select("call_text")
    assert "line 1 hay" in browser.output.value
    assert "line 11 hay" not in browser.output.value
    browser.page(1)
    assert browser.offset.value == 10
    assert "line 11 hay" in browser.output.value
    assert "line 10 hay" not in browser.output.value
    browser.page(-1)
    browser.page(-1)
    assert browser.offset.value == 0


def test_grep_literal_regex_and_context(tmp_path: Path) -> None:
    browser = CacheBrowser(_store(tmp_path))
    browser.select("call_text")
    browser.pattern.value = "needle"
    browser.grep()
    assert browser.output.value.count("needle") >= 5
    browser.pattern.value = r"line 2\d0 "
    browser.regex.value = True
    browser.before.value = 1
    browser.grep()
    assert "line 200 needle" in browser.output.value
    assert "line 199 hay" in browser.output.value
    browser.pattern.value = "("
    browser.grep()
    assert "color:#d93025" in browser.output.value
    browser.pattern.value = ""
    browser.grep()
    assert "Type a pattern to grep for." in browser.output.value


def test_character_window_of_a_long_line(tmp_path: Path) -> None:
    browser = CacheBrowser(_store(tmp_path))
    browser.select("call_long")
    browser.line_number.value = 1
    browser.char_offset.value = 50
    browser.char_limit.value = 3
    browser.line_window()
    assert "char_range=50..52\nXYZ\n" in browser.output.value
    assert "aaaa" not in browser.output.value
    assert "bbbb" not in browser.output.value


def test_typed_entries_show_images(tmp_path: Path) -> None:
    browser = CacheBrowser(_store(tmp_path))
    browser.select("call_image")
    images = [w for w in browser.images.children if isinstance(w, widgets.Image)]
    assert len(images) == 1
    assert images[0].value == _png()
    browser.select("call_text")
    assert browser.images.children == ()


def test_empty_cache_and_no_selection(tmp_path: Path) -> None:
    browser = CacheBrowser(ToolOutputCacheStore(tmp_path / "empty"))
    assert "The cache is empty" in browser.output.value
    browser.read()
    assert "Select an entry first." in browser.output.value


def test_this_sessions_entries_come_first_and_the_rest_are_labelled(tmp_path: Path) -> None:
    root = tmp_path / "cache"

    def save(origin: EntryOrigin | None, text: str) -> str:
        store = ToolOutputCacheStore(root, origin=origin)
        # Every writer reuses the same call id, as the scripted server (and some models) do.
        return store.save(tool_call_id="toolu_1", tool_name="shell", content=text).id

    legacy = save(None, "written before entries recorded their origin")
    other_notebook = save(EntryOrigin("s9", "k9", "b.ipynb"), "another notebook")
    earlier_session = save(EntryOrigin("s1", "k1", "a.ipynb"), "this kernel, earlier session")
    same_notebook = save(EntryOrigin("s3", "k3", "a.ipynb"), "this notebook, older kernel")
    current = save(EntryOrigin("s2", "k1", "a.ipynb"), "this session")
    anonymous = save(EntryOrigin("s7abcdef99"), "an agent outside any notebook")
    browser = CacheBrowser(ToolOutputCacheStore(root, origin=EntryOrigin("s2", "k1", "a.ipynb")))
    assert [e.ref_id for e in browser.entries] == [
        current,
        earlier_session,
        same_notebook,
        anonymous,
        other_notebook,
        legacy,
    ]
    labels = [label for label, _ in browser.entry_list.options]
    assert labels[0].endswith("(this session)")
    assert labels[1].endswith("(this kernel)")
    assert labels[2].endswith("(this notebook)")
    assert labels[3].endswith("(other session s7abcdef)")
    assert labels[4].endswith("(other: b.ipynb)")
    assert labels[5].endswith("(other)")
    # Six entries under one call id, none overwritten: each reads back its own text.
    browser.select(other_notebook)
    assert "another notebook" in browser.output.value
    browser.select(current)
    assert "this session" in browser.output.value
    # Fixed-width columns: every ref and every origin label starts at the same offset.
    starts = {label.index(e.ref_id) for label, e in zip(labels, browser.entries, strict=True)}
    assert len(starts) == 1
    assert len({label.index("(") for label in labels}) == 1
