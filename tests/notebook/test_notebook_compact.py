"""``%codelia compact`` in a real kernel against the scripted server."""

from __future__ import annotations

from typing import Any

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text

SUMMARY = "<retain>file a.py</retain>\n<summary>We looked at a.py.</summary>"


def test_compact_summarises_the_session_and_the_next_turn_starts_from_it(
    start_kernel: Any,
) -> None:
    script = [reply(text("a.py sets x and y.")), reply(text(SUMMARY)), reply(text("Yes."))]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        assert kernel.execute("%load_ext jupyter_codelia").status == "ok"
        early = kernel.execute("%codelia compact")
        assert early.stream_text() == "No codelia session yet: run %%codelia first.\n"
        assert kernel.execute("%%codelia\nwhat does a.py do?").status == "ok"
        compact = kernel.execute("%codelia compact")
        assert compact.status == "ok", compact.reply["content"]
        assert compact.stream_text().startswith("Compacted session ")
        assert "tools" not in server.requests[1].json
        assert kernel.execute("%%codelia\nstill there?").status == "ok"
        sent = str(server.requests[2].messages)
        assert "We looked at a.py." in sent
        help_text = kernel.execute("%codelia help").stream_text()
        assert "%codelia compact       summarise the conversation now" in help_text
