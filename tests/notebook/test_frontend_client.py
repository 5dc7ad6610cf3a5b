"""The kernel's client for the notebook front end, on its own: no announcement means no probe,
answers arrive from any thread or on the comm, and a silent front end times out clearly."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pydantic import TypeAdapter

from jupyter_codelia import wire
from jupyter_codelia.notebook.frontend import (
    NO_FRONTEND,
    FrontendClient,
    FrontendError,
    FrontendInfo,
    FrontendTimeoutError,
    FrontendUnavailableError,
)


class RecordingComm:
    """Stands in for the ipykernel comm: records what the kernel would send on it."""

    def __init__(self, answer: Any = None) -> None:
        self.sent: list[dict[str, Any]] = []
        self.answer = answer

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)
        if self.answer is not None:
            self.answer(data)


def _connected(client: FrontendClient, comm: RecordingComm) -> FrontendClient:
    client.tab_seen = True
    client.info = FrontendInfo(client_id="tab-1", client="jupyterlab", path=None, subshells=True)
    client._comm = comm
    return client


def test_without_an_announced_tab_nothing_is_probed() -> None:
    client = FrontendClient()
    with pytest.raises(FrontendUnavailableError) as raised:
        client.call("snapshot", {})
    assert str(raised.value) == NO_FRONTEND


def test_answers_from_another_thread_and_on_the_comm() -> None:
    client = FrontendClient()

    def answer_from_a_thread(data: dict[str, Any]) -> None:
        result = {"echo": data["params"]}
        args = (data["request_id"], True, result, None)
        threading.Thread(target=client.resolve, args=args).start()

    _connected(client, RecordingComm(answer_from_a_thread))
    assert client.call("ping", {"n": 1}, timeout=10) == {"echo": {"n": 1}}
    sent = client._comm.sent[0]
    assert sent["type"] == "notebook.request" and sent["client_id"] == "tab-1"
    typed = TypeAdapter(wire.NotebookKernelMessage).validate_python(sent)
    assert isinstance(typed, wire.NotebookRequest) and typed.action == "ping"

    def answer_on_the_comm(data: dict[str, Any]) -> None:
        reply = {"reply_to": data["request_id"], "ok": False, "error": "the cell is gone"}
        client._on_comm_msg({"content": {"data": reply}})

    _connected(client, RecordingComm(answer_on_the_comm))
    with pytest.raises(FrontendError, match=r"^the cell is gone$"):
        client.call("edit", {}, timeout=10)
    assert client.resolve("nobody-waits", True, {}, None) is False


def test_a_silent_front_end_times_out_and_is_greeted_again_next_time() -> None:
    client = _connected(FrontendClient(), RecordingComm())
    with pytest.raises(FrontendTimeoutError) as raised:
        client.call("snapshot", {}, timeout=0.05)
    assert str(raised.value) == (
        "the notebook front end did not answer snapshot within 0.05 s (was the tab closed or "
        "reloaded?)"
    )
    assert client.info is None  # the next call opens a new comm with a hello
