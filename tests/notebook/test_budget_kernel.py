"""Budgets in a real kernel: magic options, %config, the panel's meter and a clean end."""

from __future__ import annotations

import re
from typing import Any

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use, usage


def test_budget_ends_a_turn_at_its_limit_and_the_meter_shows_it(start_kernel: Any) -> None:
    script = [
        reply(tool_use("python", {"code": "first = 1"}), usage=usage(1000, 10)),
        reply(text("Summary: set first."), usage=usage(1000, 10)),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        kernel.execute("%config Codelia.max_cost_per_run = 0.50")
        config = kernel.execute("%codelia config").stream_text()
        assert re.search(
            r"^max_cost_per_run +0\.5 +%config Codelia.max_cost_per_run$", config, re.M
        )
        assert "%config Codelia.max_cost_per_run" in config
        bad = kernel.execute("%%codelia --max-cost cheap\nhello")
        assert bad.status == "error"
        assert bad.reply["content"]["evalue"] == "--max-cost needs a number, got 'cheap'."
        zero = kernel.execute("%%codelia --max-tool-calls 0\nhello")
        assert zero.reply["content"]["evalue"] == "--max-tool-calls must be greater than 0, got 0."
        run = kernel.execute(
            "%%codelia --approval-mode full-access --max-tool-calls 1\nset two values"
        )
        assert run.status == "ok", run.reply["content"]
        assert len(server.requests) == 2
        check = kernel.execute("r = _\nprint(r.final_text.splitlines()[0], first)")
        assert check.stream_text().strip() == (
            "[Budget Reached: run budget of 1 tool calls reached (1)] 1"
        )
        kernel.drain()
        html = kernel.html_text()
        assert "budget: run $0.0042 / $0.5 · run 1 tool calls / 1 tool calls" in html
        assert "Budget reached: run budget of 1 tool calls reached (1). Ending with a summary." in (
            html
        )
        # Ended by its budget, not by finishing the work: the header says so.
        assert re.search(r'font-weight:600">stopped by its budget</span>', html)
        assert not re.search(r'font-weight:600">completed</span>', html)
