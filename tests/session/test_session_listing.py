"""Listing sessions, finding their run logs and transcripts, and the index behind them."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_codelia.session import SessionNotFound, SessionState, SessionStore, SessionSummary

RunPython = Callable[[str], "subprocess.CompletedProcess[str]"]


def save(store: SessionStore, sid: str, updated_at: str, **fields: object) -> None:
    store.save_state(SessionState(session_id=sid, updated_at=updated_at, **fields))  # type: ignore[arg-type]


def test_sessions_are_listed_newest_first_with_their_summary(store: SessionStore) -> None:
    save(store, "old", "2026-01-01T00:00:00Z", messages=[{"role": "user", "content": "first"}])
    save(
        store,
        "new",
        "2026-01-03T00:00:00Z",
        title="Cleaning data",
        messages=[
            {"role": "user", "content": "earlier question"},
            {"role": "assistant", "content": "answer"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "  look at "},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
                    {"type": "text", "text": "this plot  "},
                ],
            },
            {"role": "tool", "tool_call_id": "t", "tool_name": "x", "content": "not a user"},
        ],
    )
    save(store, "middle", "2026-01-02T00:00:00Z")

    listed = store.list_sessions()
    assert [s.session_id for s in listed] == ["new", "middle", "old"]
    assert listed[0] == SessionSummary(
        session_id="new",
        updated_at="2026-01-03T00:00:00.000Z",
        message_count=4,
        last_user_message="look at this plot",
        title="Cleaning data",
    )
    assert listed[1].last_user_message is None
    assert listed[1].message_count == 0
    assert listed[2].last_user_message == "first"
    assert [s.session_id for s in store.list_sessions(limit=2)] == ["new", "middle"]
    assert store.list_sessions(limit=0) == []


def test_resaving_moves_a_session_up_and_ties_follow_save_order(store: SessionStore) -> None:
    same = "2026-05-05T05:05:05.000Z"
    for sid in ("a", "b", "c"):
        save(store, sid, same)
    assert [s.session_id for s in store.list_sessions()] == ["c", "b", "a"]
    save(store, "a", same, messages=[{"role": "user", "content": "again"}])
    listed = store.list_sessions()
    assert [s.session_id for s in listed] == ["a", "c", "b"]
    assert listed[0].message_count == 1


def test_long_user_messages_are_clipped_in_the_summary(store: SessionStore) -> None:
    save(store, "long", "2026-01-01T00:00:00Z", messages=[{"role": "user", "content": "y" * 5000}])
    summary = store.list_sessions()[0]
    assert summary.last_user_message == "y" * 499 + "…"


def test_an_empty_or_missing_home_lists_nothing_and_creates_nothing(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "never-created")
    assert store.list_sessions() == []
    with pytest.raises(SessionNotFound, match="session not found: abc"):
        store.transcript("abc")
    assert not (tmp_path / "never-created").exists()


@pytest.mark.parametrize(
    ("limit", "error", "message"),
    [
        (-1, ValueError, "limit must be >= 0 or None, got -1"),
        ("5", TypeError, "limit must be an int or None, got str"),
        (True, TypeError, "limit must be an int or None, got bool"),
    ],
)
def test_bad_limits_are_rejected(
    store: SessionStore, limit: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        store.list_sessions(limit=limit)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_run_logs_and_transcript_of_a_session_oldest_first(store: SessionStore) -> None:
    sid = store.new_session_id()
    other = store.new_session_id()
    # Opened out of order, on different days: the list follows started_at.
    with store.open_run_log(
        run_id="second", session_id=sid, header={"started_at": "2026-02-02T10:00:00Z"}
    ) as log:
        log.append("run.start", input={"type": "text", "text": "two"})
        log.append("agent.event", seq=0, event={"type": "final", "content": "2"})
    with store.open_run_log(
        run_id="first", session_id=sid, header={"started_at": "2026-01-31T23:59:59Z"}
    ) as log:
        log.append("run.start", input={"type": "text", "text": "one"})
        log.append("run.end", outcome="completed")
    store.open_run_log(run_id="foreign", session_id=other, header={}).close()
    store.open_run_log(run_id="sessionless", session_id=None, header={}).close()

    paths = store.run_log_paths(sid)
    assert paths == [
        store.sessions_dir / "2026" / "01" / "31" / "first.jsonl",
        store.sessions_dir / "2026" / "02" / "02" / "second.jsonl",
    ]
    records = store.transcript(sid)
    assert [(r["run_id"], r["type"]) for r in records] == [
        ("first", "header"),
        ("first", "run.start"),
        ("first", "run.end"),
        ("second", "header"),
        ("second", "run.start"),
        ("second", "agent.event"),
    ]
    # A session with runs but no snapshot yet (a crash before the first save) is still found.
    with pytest.raises(SessionNotFound):
        store.load_state(sid)
    assert [p.name for p in store.run_log_paths(other)] == ["foreign.jsonl"]


def test_transcript_skips_records_without_a_type_and_deleted_logs(store: SessionStore) -> None:
    sid = store.new_session_id()
    store.save_state(SessionState(session_id=sid))
    with store.open_run_log(run_id="r1", session_id=sid, header={}) as log:
        log.append("run.start", input={"type": "text", "text": "x"})
    with open(log.path, "a", encoding="utf-8") as file:
        file.write('{"no_type": true}\n{"type": 5}\n')
    gone = store.open_run_log(run_id="r2", session_id=sid, header={})
    gone.close()
    gone.path.unlink()
    assert [r["type"] for r in store.transcript(sid)] == ["header", "run.start"]
    assert store.run_log_paths(sid) == [log.path]


def test_unknown_session_has_no_run_logs(store: SessionStore) -> None:
    store.save_state(SessionState(session_id="known"))
    assert store.run_log_paths("known") == []
    assert store.transcript("known") == []
    with pytest.raises(SessionNotFound, match=r"^session not found: unknown$"):
        store.run_log_paths("unknown")


def test_a_deleted_index_is_rebuilt_from_the_files(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    sid = store.new_session_id()
    with store.open_run_log(run_id="r1", session_id=sid, header={}) as log:
        log.append("run.end", outcome="completed")
    save(store, sid, "2026-01-02T00:00:00Z", messages=[{"role": "user", "content": "hi"}])
    save(store, "older", "2026-01-01T00:00:00Z")
    before = store.list_sessions()
    store.close()
    (tmp_path / "sessions" / "index.db").unlink()

    fresh = SessionStore(tmp_path)
    assert fresh.list_sessions() == before
    assert fresh.run_log_paths(sid) == [log.path]


def test_a_corrupted_index_is_set_aside_and_rebuilt(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    save(store, "s1", "2026-01-01T00:00:00Z", title="kept")
    store.close()
    index = tmp_path / "sessions" / "index.db"
    index.write_bytes(b"this is not an sqlite database" * 100)

    fresh = SessionStore(tmp_path)
    assert [(s.session_id, s.title) for s in fresh.list_sessions()] == [("s1", "kept")]
    assert (tmp_path / "sessions" / "index.db.corrupt").exists()
    save(fresh, "s2", "2026-01-02T00:00:00Z")
    assert [s.session_id for s in fresh.list_sessions()] == ["s2", "s1"]


def test_unreadable_snapshots_are_left_out_of_a_rebuilt_index(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    save(store, "good", "2026-01-01T00:00:00Z")
    store.close()
    (tmp_path / "sessions" / "state" / "broken.json").write_text("{not json")
    (tmp_path / "sessions" / "index.db").unlink()
    assert [s.session_id for s in SessionStore(tmp_path).list_sessions()] == ["good"]


WRITER = """
import sys
from jupyter_codelia.session import SessionState, SessionStore
store = SessionStore(sys.argv[1])
for i in range(15):
    sid = sys.argv[2] + "-" + str(i)
    with store.open_run_log(run_id="run-" + sid, session_id=sid, header={}) as log:
        log.append("run.end", outcome="completed")
    store.save_state(SessionState(session_id=sid, messages=[{"role": "user", "content": sid}]))
"""


def test_two_processes_share_one_home(store: SessionStore, run_python: RunPython) -> None:
    # Two kernels writing at once: both processes' sessions and runs end up listed.
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store.home), f"p{n}"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    listed = store.list_sessions()
    assert sorted(s.session_id for s in listed) == sorted(
        f"p{n}-{i}" for n in range(2) for i in range(15)
    )
    assert all(s.last_user_message == s.session_id for s in listed)
    assert [p.name for p in store.run_log_paths("p1-7")] == ["run-p1-7.jsonl"]
    # A fresh process reads the same index.
    result = run_python(
        f"""
        from jupyter_codelia.session import SessionStore
        print(len(SessionStore({str(store.home)!r}).list_sessions()))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "30"


def test_index_heals_snapshots_written_or_deleted_behind_its_back(
    tmp_path: Path, run_python: RunPython
) -> None:
    store = SessionStore(tmp_path)
    save(store, "kept", "2026-01-01T00:00:00Z")
    save(store, "deleted", "2026-01-02T00:00:00Z")
    with store.open_run_log(run_id="gone-run", session_id="kept", header={}) as gone:
        pass
    store.close()
    # A crash between replacing a snapshot and indexing it, then a snapshot removed by hand.
    late = SessionState(session_id="unindexed", updated_at="2026-01-03T00:00:00Z")
    (tmp_path / "sessions" / "state" / "unindexed.json").write_text(late.model_dump_json())
    (tmp_path / "sessions" / "state" / "deleted.json").unlink()
    gone.path.unlink()

    # The next process to open the index reconciles it with the files.
    result = run_python(
        f"""
        from jupyter_codelia.session import SessionStore
        store = SessionStore({str(tmp_path)!r})
        print([s.session_id for s in store.list_sessions()], store.run_log_paths("kept"))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['unindexed', 'kept'] []"


def test_an_index_from_another_release_is_rebuilt(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    save(store, "s1", "2026-01-01T00:00:00Z")
    store.close()
    db = sqlite3.connect(tmp_path / "sessions" / "index.db", isolation_level=None)
    try:
        db.execute("DROP TABLE sessions")
        db.execute("CREATE TABLE sessions (something_else TEXT)")
        db.execute("PRAGMA user_version = 99")
    finally:
        db.close()
    assert [s.session_id for s in SessionStore(tmp_path).list_sessions()] == ["s1"]


def test_a_home_removed_while_open_starts_afresh(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "home")
    save(store, "before", "2026-01-01T00:00:00Z")
    assert [s.session_id for s in store.list_sessions()] == ["before"]
    shutil.rmtree(tmp_path / "home")
    assert store.list_sessions() == []
    save(store, "after", "2026-01-02T00:00:00Z")
    # The open connection to the deleted index is not reused: "before" is really gone.
    assert [s.session_id for s in store.list_sessions()] == ["after"]
    with pytest.raises(SessionNotFound):
        store.load_state("before")
