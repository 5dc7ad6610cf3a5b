"""Run logs: header, record stamping and order, tolerant reading, bad input."""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from jupyter_codelia.agent.events import TextEvent, event_to_json
from jupyter_codelia.session import InvalidSessionIdError, SessionStore, read_jsonl

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_header_then_records_in_order_with_stamped_fields(store: SessionStore) -> None:
    sid = store.new_session_id()
    log = store.open_run_log(
        run_id="run-1", session_id=sid, header={"model": {"provider": "anthropic", "name": "m"}}
    )
    log.append("run.start", input={"type": "text", "text": "hello"})
    # The agent logs an event in its wire form (no None fields), as event_to_json gives it.
    event = event_to_json(TextEvent(content="hi", timestamp=5, seq=1))
    log.append("agent.event", seq=1, event=event)
    log.append("run.end", outcome="completed", final="bye")
    log.close()

    records = lines_of(log.path)
    header = records[0]
    assert header["type"] == "header"
    assert header["schema_version"] == 1
    assert header["run_id"] == "run-1"
    assert header["session_id"] == sid
    assert header["model"] == {"provider": "anthropic", "name": "m"}
    assert "ts" not in header
    assert isinstance(header["started_at"], str)
    assert ISO_UTC.fullmatch(header["started_at"])

    assert [r["type"] for r in records[1:]] == ["run.start", "agent.event", "run.end"]
    for record in records[1:]:
        assert record["run_id"] == "run-1"
        assert isinstance(record["ts"], str)
        assert ISO_UTC.fullmatch(record["ts"])
        assert list(record)[:3] == ["type", "ts", "run_id"]
    assert records[1]["input"] == {"type": "text", "text": "hello"}
    # Pydantic models (agent events) are stored as their JSON form.
    assert records[2]["event"] == {"type": "text", "content": "hi", "timestamp": 5, "seq": 1}
    assert records[3]["final"] == "bye"
    stamps = [str(r["ts"]) for r in records[1:]]
    assert stamps == sorted(stamps)


def test_log_lives_under_the_utc_date_of_started_at(store: SessionStore) -> None:
    log = store.open_run_log(
        run_id="dated", session_id=None, header={"started_at": "2025-03-04T23:30:00-02:00"}
    )
    log.close()
    assert log.path == store.sessions_dir / "2025" / "03" / "05" / "dated.jsonl"
    header = lines_of(log.path)[0]
    assert header["started_at"] == "2025-03-05T01:30:00.000Z"
    # Without a session the header has no session_id at all.
    assert "session_id" not in header

    today = datetime.now(timezone.utc)
    with store.open_run_log(run_id="now", session_id=None, header={}) as log:
        pass
    assert log.path.parent == store.sessions_dir / f"{today:%Y/%m/%d}"


def test_appends_from_many_threads_are_whole_lines_in_per_thread_order(
    store: SessionStore,
) -> None:
    log = store.open_run_log(run_id="threads", session_id=None, header={})
    per_thread = 200

    def worker(name: str) -> None:
        for i in range(per_thread):
            log.append("agent.event", worker=name, i=i, payload="x" * 500)

    threads = [threading.Thread(target=worker, args=(f"w{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.close()

    records = lines_of(log.path)[1:]
    assert len(records) == 6 * per_thread
    for n in range(6):
        seen = [r["i"] for r in records if r["worker"] == f"w{n}"]
        assert seen == list(range(per_thread))


def test_torn_last_line_is_skipped(store: SessionStore) -> None:
    sid = store.new_session_id()
    log = store.open_run_log(run_id="torn", session_id=sid, header={})
    log.append("run.start", input={"type": "text", "text": "a"})
    log.append("run.status", status="running")
    log.close()
    # A crash mid-write leaves half a record with no newline.
    with open(log.path, "ab") as file:
        file.write(b'{"type":"agent.event","ts":"2026-01-01T00:00:00.000Z","run_id":"to')

    records = list(read_jsonl(log.path))
    assert [r["type"] for r in records] == ["header", "run.start", "run.status"]
    assert [r["type"] for r in store.transcript(sid)] == ["header", "run.start", "run.status"]


def test_damaged_lines_anywhere_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(
        b'{"type":"header"}\n'
        b"\n"
        b"not json at all\n"
        b"[1, 2, 3]\n"
        b'"a string"\n'
        b'{"type":"bad utf8 \xff\xfe"}\n'
        b'{"type":"run.end","outcome":"completed"}\n'
        b'{"type":"run.e'
    )
    assert list(read_jsonl(path)) == [
        {"type": "header"},
        {"type": "run.end", "outcome": "completed"},
    ]


def test_text_that_is_not_valid_unicode_survives(store: SessionStore) -> None:
    with store.open_run_log(run_id="surrogates", session_id=None, header={}) as log:
        log.append("tool.output", result_raw="bad \udcff byte, ok é")
    records = list(read_jsonl(log.path))
    assert records[1]["result_raw"] == "bad \udcff byte, ok é"


def test_append_after_close_is_a_clear_error(store: SessionStore) -> None:
    log = store.open_run_log(run_id="closed", session_id=None, header={})
    log.close()
    log.close()  # closing twice is harmless
    assert log.closed
    with pytest.raises(ValueError, match=r"^run log is closed: .*closed\.jsonl$"):
        log.append("run.end", outcome="completed")


@pytest.mark.parametrize(
    ("record_type", "fields", "message"),
    [
        ("", {}, "run log record type must be a non-empty string, got ''"),
        (
            "run.end",
            {"ts": "2020-01-01T00:00:00Z"},
            "run log record field 'ts' is set by the log; remove it from the fields of the "
            "'run.end' record",
        ),
        (
            "run.end",
            {"type": "other"},
            "run log record field 'type' is set by the log; remove it from the fields of the "
            "'run.end' record",
        ),
        (
            "run.end",
            {"run_id": "someone-else"},
            "run log record 'run.end' has run_id 'someone-else' but this log belongs to run 'r'",
        ),
        (
            "run.end",
            {"final": object()},
            "run log record 'run.end' is not JSON-serializable (Unable to serialize unknown "
            "type: <class 'object'>); pass plain data or pydantic models",
        ),
    ],
)
def test_bad_records_are_rejected_and_nothing_is_written(
    store: SessionStore, record_type: str, fields: dict[str, object], message: str
) -> None:
    with store.open_run_log(run_id="r", session_id=None, header={}) as log:
        with pytest.raises((ValueError, TypeError)) as info:
            log.append(record_type, **fields)
        assert str(info.value) == message
        log.append("run.end", outcome="completed", run_id="r")  # the same run_id is fine
    assert [r["type"] for r in read_jsonl(log.path)] == ["header", "run.end"]


def test_run_ids_are_unique_and_file_safe(store: SessionStore) -> None:
    store.open_run_log(run_id="once", session_id=None, header={}).close()
    with pytest.raises(ValueError, match=r"^run log already exists: .*once\.jsonl; every run"):
        store.open_run_log(run_id="once", session_id=None, header={})
    with pytest.raises(InvalidSessionIdError, match=r"^invalid run id '\.\./escape': use 1-128"):
        store.open_run_log(run_id="../escape", session_id=None, header={})
    with pytest.raises(InvalidSessionIdError, match=r"^invalid session id 'a/b'"):
        store.open_run_log(run_id="fine", session_id="a/b", header={})
    assert not any(store.home.parent.glob("**/escape*"))


def test_bad_headers_are_rejected_before_any_file_exists(store: SessionStore) -> None:
    with pytest.raises(
        ValueError,
        match=r"^run log header field 'run_id' is 'other' but the store sets it to 'h1'; drop",
    ):
        store.open_run_log(run_id="h1", session_id=None, header={"run_id": "other"})
    with pytest.raises(ValueError, match=r"^invalid timestamp 'yesterday': expected ISO-8601"):
        store.open_run_log(run_id="h2", session_id=None, header={"started_at": "yesterday"})
    with pytest.raises(ValueError, match=r"^timestamp '2025-01-01T00:00:00' has no UTC offset"):
        store.open_run_log(
            run_id="h3", session_id=None, header={"started_at": "2025-01-01T00:00:00"}
        )
    with pytest.raises(ValueError, match=r"^run log header started_at must be an ISO-8601"):
        store.open_run_log(run_id="h4", session_id=None, header={"started_at": 12})
    with pytest.raises(TypeError, match=r"^run log header must be a dict, got list"):
        store.open_run_log(run_id="h5", session_id=None, header=[])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^run log header is not JSON-serializable"):
        store.open_run_log(run_id="h6", session_id=None, header={"x": object()})
    assert not list(store.sessions_dir.glob("**/h*.jsonl"))
    # Repeating a store-owned field with the same value is accepted.
    store.open_run_log(run_id="h7", session_id=None, header={"run_id": "h7"}).close()


def test_values_are_written_as_standard_json(store: SessionStore) -> None:
    with store.open_run_log(run_id="types", session_id=None, header={}) as log:
        log.append(
            "tool.output",
            when=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
            where=Path("/data/file.csv"),
            tags=("a", "b"),
            stats={"mean": float("nan"), "max": float("inf"), "n": 3},
        )
    line = log.path.read_bytes().splitlines()[1]
    record = json.loads(line, parse_constant=lambda name: pytest.fail(f"non-JSON {name}"))
    assert record["when"] == "2026-01-02T03:04:05Z"
    assert record["where"] == "/data/file.csv"
    assert record["tags"] == ["a", "b"]
    assert record["stats"] == {"mean": None, "max": None, "n": 3}
