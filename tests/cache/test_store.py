"""The store: typed parts, streaming writer, eviction, errors and concurrent use."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from PIL import Image

from jupyter_codelia.cache import (
    CacheLimits,
    EntryOrigin,
    ToolOutputCacheStore,
    ToolOutputCorruptedError,
    ToolOutputEvictedError,
    ToolOutputNotFoundError,
    ToolOutputStore,
    ToolOutputTooLargeError,
    WriterClosedError,
)
from jupyter_codelia.llm.messages import ImagePart, TextPart


def _png(color: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), color).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def store(tmp_path: Path) -> ToolOutputCacheStore:
    return ToolOutputCacheStore(tmp_path / "store")


def test_store_implements_the_protocol(store: ToolOutputCacheStore) -> None:
    assert isinstance(store, ToolOutputStore)


def test_image_parts_are_kept_typed(store: ToolOutputCacheStore) -> None:
    png = _png()
    parts = [TextPart(text="plot:"), ImagePart.from_bytes(png, "image/png")]
    ref = store.save(tool_call_id="img", tool_name="python", content=parts)
    assert (ref.id, ref.line_count) == ("img", 1)
    assert store.read("img") == "    1  plot:[image]"  # the text projection is what grep sees
    back = store.read_parts("img")
    assert isinstance(back[0], TextPart) and back[0].text == "plot:"
    assert isinstance(back[1], ImagePart)
    assert back[1].data_bytes() == png
    assert Image.open(io.BytesIO(back[1].data_bytes() or b"")).size == (8, 6)
    entry = store.get_entry("img")
    assert entry.has_parts and entry.tool_name == "python"


def test_parts_given_as_dicts_and_unknown_items(store: ToolOutputCacheStore) -> None:
    png = _png("blue")
    image = ImagePart.from_bytes(png, "image/png").dump()
    store.save(
        tool_call_id="d", tool_name="t", content=[{"type": "text", "text": "a"}, image, {"x": 1}]
    )
    assert store.read("d") == "    1  a[image][content]"
    parts = store.read_parts("d")
    assert [p.type for p in parts] == ["text", "image_url", "text"]
    assert isinstance(parts[1], ImagePart) and parts[1].data_bytes() == png


def test_text_entries_read_back_as_one_text_part(store: ToolOutputCacheStore) -> None:
    store.save(tool_call_id="t", tool_name="t", content=[TextPart(text="a\n"), TextPart(text="b")])
    assert store.read_parts("t") == [TextPart(text="a\nb")]
    assert not store.get_entry("t").has_parts
    with pytest.raises(ToolOutputTooLargeError, match="has 3 bytes of text, more than"):
        store.read_parts("t", max_text_bytes=2)


def test_writer_streams_and_commits_on_close(store: ToolOutputCacheStore) -> None:
    writer = store.writer(tool_call_id="s", tool_name="shell")
    assert writer.ref_id == "s"
    writer.write("part one ")
    writer.write("and two\nsecond")
    with pytest.raises(ToolOutputNotFoundError):
        store.read("s")  # nothing is visible before close
    ref = writer.close()
    assert (ref.byte_size, ref.line_count) == (23, 2)
    assert store.read("s") == "    1  part one and two\n    2  second"
    with pytest.raises(WriterClosedError, match="already closed; open a new one"):
        writer.write("more")
    with pytest.raises(WriterClosedError):
        writer.close()
    assert store.streamed_ref("s") == ref
    store.save(tool_call_id="plain", tool_name="t", content="x")
    assert store.streamed_ref("plain") is None
    assert store.streamed_ref("missing") is None


def test_writer_abort_and_errors_leave_nothing(store: ToolOutputCacheStore) -> None:
    writer = store.writer(tool_call_id="a", tool_name="t")
    writer.write("x")
    writer.abort()
    writer.abort()
    failing = store.writer(tool_call_id="b", tool_name="t")
    with pytest.raises(RuntimeError, match="boom"), failing as w:
        w.write("partial")
        raise RuntimeError("boom")
    wrong = store.writer(tool_call_id="c", tool_name="t")
    with pytest.raises(TypeError, match="takes str, got bytes; decode bytes first"):
        wrong.write(b"raw")  # type: ignore[arg-type]
    wrong.abort()
    for ref_id in ("a", "b", "c"):
        with pytest.raises(ToolOutputNotFoundError):
            store.read(ref_id)
    assert [p.name for p in store.root.iterdir() if p.name.startswith(".tmp-")] == []


def test_a_reused_call_id_gets_a_fresh_ref_and_overwrites_nothing(
    store: ToolOutputCacheStore,
) -> None:
    first = store.save(tool_call_id="o", tool_name="t", content="old\n" * 100)
    second = store.save(tool_call_id="o", tool_name="t2", content="new")
    third = store.writer(tool_call_id="o", tool_name="shell")
    assert (first.id, second.id, third.ref_id) == ("o", "o-2", "o-3")
    third.abort()  # an aborted writer frees its name for the next entry
    assert store.save(tool_call_id="o", tool_name="t", content="x").id == "o-3"
    assert store.read("o").startswith("    1  old\n    2  old")
    assert store.read("o-2") == "    1  new"
    assert store.get_entry("o-2").tool_name == "t2"
    assert [p.name for p in store.root.iterdir() if p.name.startswith(".tmp-")] == []


def test_two_sessions_reusing_call_ids_both_stay_readable(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    one = ToolOutputCacheStore(root, origin=EntryOrigin(session_id="s1", kernel_id="k1"))
    two = ToolOutputCacheStore(root, origin=EntryOrigin(session_id="s2", notebook="b.ipynb"))
    ref_one = one.save(tool_call_id="toolu_1", tool_name="shell", content="from one")
    with two.writer(tool_call_id="toolu_1", tool_name="shell") as writer:
        writer.write("from two")
        ref_two = writer.close()
    assert ref_one.id == "toolu_1" and ref_two.id == "toolu_1-2"
    # Each session finds its own streamed entry, never the other's.
    assert two.streamed_ref("toolu_1") == ref_two
    assert one.streamed_ref("toolu_1") is None
    # A third process opening the same directory reads both.
    reader = ToolOutputCacheStore(root)
    assert reader.read("toolu_1") == "    1  from one"
    assert reader.read("toolu_1-2") == "    1  from two"
    rows = {e.ref_id: e for e in reader.list_entries()}
    assert (rows["toolu_1"].session_id, rows["toolu_1"].kernel_id) == ("s1", "k1")
    assert (rows["toolu_1-2"].session_id, rows["toolu_1-2"].notebook) == ("s2", "b.ipynb")


def test_list_entries(store: ToolOutputCacheStore) -> None:
    assert store.list_entries() == []
    store.save(tool_call_id="first", tool_name="read", content="a\nb\nc")
    store.save(tool_call_id="second", tool_name="shell", content="boom", is_error=True)
    entries = store.list_entries()
    assert [e.ref_id for e in entries] == ["second", "first"]
    first = entries[1]
    assert (first.tool_name, first.size_bytes, first.line_count) == ("read", 5, 3)
    assert not first.is_error and entries[0].is_error
    assert first.disk_bytes > first.size_bytes
    assert first.created_at <= first.last_used_at


def test_missing_and_invalid_arguments(store: ToolOutputCacheStore) -> None:
    with pytest.raises(ToolOutputNotFoundError, match="Cached output nope not found"):
        store.read("nope")
    with pytest.raises(ToolOutputNotFoundError, match=r"Cached output \(empty\) not found"):
        store.grep("", "x")
    store.save(tool_call_id="x", tool_name="t", content="x")
    with pytest.raises(ValueError, match="offset must be an integer >= 0, got -1"):
        store.read("x", -1)
    with pytest.raises(ValueError, match="limit must be a positive number of lines, got 0"):
        store.read("x", 0, 0)
    with pytest.raises(ValueError, match="line_number is 1-based and must be at least 1, got 0"):
        store.read_line("x", 0)
    with pytest.raises(ValueError, match="max_matches must be a positive number, got 0"):
        store.grep("x", "x", max_matches=0)
    with pytest.raises(ValueError, match="before must be an integer >= 0"):
        store.grep("x", "x", before=-2)
    with pytest.raises(ValueError, match="tool_call_id must be a non-empty string"):
        store.save(tool_call_id="", tool_name="t", content="x")
    with pytest.raises(TypeError, match="content must be a str or a list of content parts"):
        store.save(tool_call_id="y", tool_name="t", content=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_bytes must be a positive number of bytes"):
        ToolOutputCacheStore(store.root, max_bytes=0)
    with pytest.raises(ValueError, match="index_stride must be a positive number of bytes"):
        ToolOutputCacheStore(store.root, index_stride=0)


def test_invalid_regex_is_a_clear_error(store: ToolOutputCacheStore, tmp_path: Path) -> None:
    from jupyter_codelia.cache import InvalidPatternError

    store.save(tool_call_id="r", tool_name="t", content="abc")
    with pytest.raises(InvalidPatternError, match=r"Invalid regex 'a\(':.*unclosed group"):
        store.grep("r", "a(", regex=True)
    with pytest.raises(InvalidPatternError, match="cannot contain or match a line break"):
        store.grep("r", "a\nb", regex=True)
    python_store = ToolOutputCacheStore(store.root, use_ripgrep=False)
    with pytest.raises(InvalidPatternError, match=r"Invalid regex 'a\(': missing \)"):
        python_store.grep("r", "a(", regex=True)
    assert store.grep("r", "a(") == "No matches for: a("  # literal by default


def test_corrupted_entries_give_clear_errors(store: ToolOutputCacheStore) -> None:
    store.save(tool_call_id="m", tool_name="t", content="hello\nworld")
    meta = store.root / "m.json"
    original = meta.read_bytes()
    meta.write_text("{not json")
    with pytest.raises(ToolOutputCorruptedError, match="Cached output m is corrupted: its meta"):
        store.read("m")
    assert store.list_entries() == []  # unreadable entries are left out of the listing
    meta.write_bytes(original)
    text = next(p for p in store.root.iterdir() if p.suffix == ".txt")
    text.write_bytes(b"hello")
    with pytest.raises(ToolOutputCorruptedError, match="text file has 5 bytes but 11 were written"):
        store.read("m")
    store.save(tool_call_id="i", tool_name="t", content="abc")
    index = next(p for p in store.root.iterdir() if p.name.startswith("i.") and p.suffix == ".idx")
    index.write_bytes(b"garbage")
    with pytest.raises(ToolOutputCorruptedError, match="its line index is unreadable"):
        store.grep("i", "a")
    index.unlink()
    with pytest.raises(ToolOutputCorruptedError, match="its line index file is missing"):
        store.read_line("i", 1)


def test_lru_eviction_of_whole_entries(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path, max_bytes=4500)  # about 3.5 entries
    for name in ("a", "b", "c"):
        store.save(tool_call_id=name, tool_name="t", content=name * 900)
        time.sleep(0.02)  # distinct "last used" stamps (ordering only, nothing is timed)
    store.read("a")  # a becomes the most recently used
    time.sleep(0.02)
    store.save(tool_call_id="d", tool_name="t", content="d" * 900)
    with pytest.raises(ToolOutputEvictedError, match="Cached output b was evicted"):
        store.read("b")
    for name in ("a", "c", "d"):
        assert store.read(name).startswith("    1  ")
    assert store.disk_usage() <= 4500 * 0.9  # evicted down to 90% of the cap
    assert sorted(e.ref_id for e in store.list_entries()) == ["a", "c", "d"]
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith("b.")]
    assert left == ["b.evicted"]  # data and metadata are gone; a tombstone says why
    # Saving the call id again makes a fresh entry: an old placeholder of "b" never shows it.
    assert store.save(tool_call_id="b", tool_name="t", content="again").id == "b-2"
    assert store.read("b-2") == "    1  again"
    with pytest.raises(ToolOutputEvictedError):
        store.read("b")


def test_newest_entry_survives_even_over_the_cap(tmp_path: Path) -> None:
    store = ToolOutputCacheStore(tmp_path, max_bytes=1000)
    store.save(tool_call_id="small", tool_name="t", content="s")
    store.save(tool_call_id="huge", tool_name="t", content="h" * 5000)
    assert store.read("huge", 0, 1).startswith("    1  hhh")
    with pytest.raises(ToolOutputEvictedError):
        store.read("small")


def test_env_overrides_limits_and_cap(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_MAX_READ_BYTES", "30")
    monkeypatch.setenv("JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_MAX_LINE_LENGTH", "-5")
    monkeypatch.setenv("JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_MAX_BYTES", "12345")
    with caplog.at_level(logging.WARNING, logger="jupyter_codelia.cache"):
        store = ToolOutputCacheStore(tmp_path)
    assert store.limits == CacheLimits(max_line_length=1000, max_read_bytes=30)
    assert store.max_bytes == 12345
    assert "JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_MAX_LINE_LENGTH='-5' is not a positive integer" in (
        caplog.text
    )


def test_threads_share_one_store(store: ToolOutputCacheStore) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(15):
                store.save(tool_call_id=f"t{n}-{i}", tool_name="t", content=f"{n} {i}\n" * 50)
                same = store.save(tool_call_id="same", tool_name="t", content=f"{n}\n" * 10)
                assert store.read(f"t{n}-{i}", 49) == f"   50  {n} {i}\n   51  "
                assert store.read(same.id, 0, 1).startswith(f"    1  {n}\n")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    # Every save of the reused call id "same" got its own entry: none overwrote another.
    assert len(store.list_entries()) == 6 * 15 * 2


def test_two_processes_write_one_store(tmp_path: Path) -> None:
    script = Path(__file__).with_name("_writer_proc.py")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), name, "40"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    outputs = [p.communicate(timeout=240) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    store = ToolOutputCacheStore(tmp_path, max_bytes=400_000)
    # 80 saves under the call id "shared" from two processes: 80 distinct refs, each intact
    # (or evicted whole by the size cap), none overwritten by the other process.
    shared = {p.name.split(".")[0] for p in tmp_path.iterdir() if p.name.startswith("shared")}
    assert shared == {"shared", *(f"shared-{n}" for n in range(2, 81))}
    readable = 0
    for entry in store.list_entries():
        if entry.ref_id.startswith("shared"):
            assert entry.line_count == 201
            assert store.read(entry.ref_id, 0, 1).startswith(("    1  alpha ", "    1  beta "))
            continue
        name, i = entry.ref_id.rsplit("-", 1)
        assert store.grep(entry.ref_id, "line 49") == (
            f"ref:{entry.ref_id}\n   50  {name} entry {i} line 49"
        )
        readable += 1
    assert readable > 0
    assert store.disk_usage() <= 400_000
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_dropped_writer_leaves_no_temp_file(store: ToolOutputCacheStore) -> None:
    import gc

    writer = store.writer(tool_call_id="dropped", tool_name="t")
    writer.write("x" * 1000)
    del writer
    gc.collect()
    assert [p.name for p in store.root.iterdir() if p.name.startswith(".tmp-")] == []


def test_unusable_directory_is_a_clear_error(tmp_path: Path) -> None:
    from jupyter_codelia.cache import ToolOutputCacheError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = ToolOutputCacheStore(blocker / "cache")
    with pytest.raises(ToolOutputCacheError, match="Cannot create the tool output cache directory"):
        store.save(tool_call_id="c", tool_name="t", content="x")
    with pytest.raises(ToolOutputNotFoundError):
        store.read("c")
    assert store.list_entries() == []


def test_old_eviction_notes_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import jupyter_codelia.cache._eviction as eviction

    monkeypatch.setattr(eviction, "MAX_TOMBSTONES", 3)
    store = ToolOutputCacheStore(tmp_path, max_bytes=600)
    for i in range(8):
        store.save(tool_call_id=f"e{i}", tool_name="t", content="y" * 300)
        time.sleep(0.01)
    notes = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".evicted"))
    assert len(notes) <= 4  # pruned to 3 at each commit, plus the one this commit added
    with pytest.raises(ToolOutputEvictedError):
        store.read("e6")
    with pytest.raises(ToolOutputNotFoundError):
        store.read("e0")  # its note was pruned: the ref is simply unknown now
    assert store.get_entry("e7").disk_bytes > 300


def test_size_accounting_matches_the_disk(tmp_path: Path) -> None:
    """Most commits update a running total instead of scanning the directory; it must stay
    exact through overwrites, typed parts and evictions, and recover from a damaged file."""
    store = ToolOutputCacheStore(tmp_path, max_bytes=20_000)
    png = ImagePart.from_bytes(_png(), "image/png")
    for i in range(40):
        store.save(tool_call_id=f"k{i % 13}", tool_name="t", content="z" * (i * 37 % 900))
        if i % 5 == 0:
            store.save(tool_call_id=f"img{i}", tool_name="t", content=[png])
        total = int((tmp_path / ".usage").read_text().split()[0])
        assert total == store.disk_usage()
        assert total <= 20_000
    (tmp_path / ".usage").write_text("garbage")
    store.save(tool_call_id="after", tool_name="t", content="x")
    assert int((tmp_path / ".usage").read_text().split()[0]) == store.disk_usage()


def test_delete(store: ToolOutputCacheStore) -> None:
    assert store.delete("none") is False
    store.save(tool_call_id="keep", tool_name="t", content="k")
    store.save(
        tool_call_id="gone", tool_name="t", content=[ImagePart.from_bytes(_png(), "image/png")]
    )
    assert store.delete("gone") is True
    assert store.delete("gone") is False
    with pytest.raises(ToolOutputNotFoundError, match="Cached output gone not found"):
        store.read_parts("gone")
    assert [e.ref_id for e in store.list_entries()] == ["keep"]
    assert not [p for p in store.root.iterdir() if p.name.startswith("gone.")]
    assert int((store.root / ".usage").read_text().split()[0]) == store.disk_usage()
