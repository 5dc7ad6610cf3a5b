"""Side-panel first paint of a 200-event past session: kernel behind a gateway vs local kernel.

Runs real JupyterLab, a Jupyter Kernel Gateway and Debian Chromium (the fixtures of
tests/browser/conftest.py). The same session (one run of 200 agent events: tool calls and their
results) is written into the store of a local kernel and into the store of a gateway kernel. In
each lab the panel opens that session the way a click in the session picker does, and the time
from the click to the first animation frame after the transcript is in the DOM is measured. The
local lab's kernel shares the server's store, so the panel reads it over the server's REST fast
path; the gateway's kernel has its own store, read through the kernel (a subshell request relayed
by the server and the gateway). The local run is the baseline measured in the same run; the
target is a ratio of at most 2.

    .venv/bin/python bench/gateway_sidepanel.py [--rounds 9] [--events 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _browser import load_browser_fixtures

TARGET_RATIO = 2.0
PANEL_JS = (
    "Array.from(window.jupyterapp.shell.widgets('right')).find(w => w.id === 'jp-codelia-panel')"
)

# Open the session as the picker does; resolve at the first frame after it is rendered.
MEASURE_JS = """async ({ sessionId, minimum }) => {
  const panel = PANEL;
  panel.view.apply(panel.transcript.reset());
  await new Promise(resolve => requestAnimationFrame(() => resolve(null)));
  const summary = { session_id: sessionId, updated_at: null, message_count: 1,
                    last_user_message: 'bench', title: 'bench' };
  const start = performance.now();
  await panel.resume(summary);
  void panel.view.node.scrollHeight;
  await new Promise(resolve => requestAnimationFrame(() => resolve(null)));
  const elapsed = performance.now() - start;
  if (panel.view.size < minimum) {
    throw new Error(`the transcript did not render (${panel.view.size} items)`);
  }
  return elapsed;
}""".replace("PANEL", PANEL_JS)


def write_session(home: Path, session_id: str, events: int) -> None:
    """One saved session whose single run logged ``events`` agent events."""
    from jupyter_codelia.session import SessionState, SessionStore, ensure_store_id

    ensure_store_id(home)
    store = SessionStore(home)
    try:
        run_id = str(uuid.uuid4())
        with store.open_run_log(run_id=run_id, session_id=session_id, header={}) as log:
            log.append("run.start", session_id=session_id, input={"type": "text", "text": "bench"})
            log.append("run.status", status="running")
            for seq in range(events):
                call = f"call{seq // 2}"
                if seq % 2 == 0:
                    event = {
                        "type": "tool_call",
                        "tool": "read",
                        "args": {"file_path": f"src/module_{seq // 2}.py"},
                        "tool_call_id": call,
                    }
                else:
                    body = "\n".join(f"{n:6}  value_{n} = {n} * 2" for n in range(1, 21))
                    event = {"type": "tool_result", "tool": "read", "result": body}
                    event["tool_call_id"] = call
                log.append("agent.event", seq=seq, event=event)
            log.append("run.status", status="completed")
            log.append("run.end", outcome="completed", final=None)
        messages = [
            {"role": "user", "content": "bench"},
            {"role": "assistant", "content": "done"},
        ]
        store.save_state(SessionState(session_id=session_id, messages=messages, title="bench"))
    finally:
        store.close()


def open_panel_on_kernel(fixtures: Any, page: Any, lab: Any, gateway: Any | None) -> str:
    """Open a notebook with jupyter_codelia loaded and the panel connected; the read route."""
    if gateway is None:
        fixtures.open_notebook_in(page, lab, "bench.ipynb")
    else:
        fixtures.open_gateway_notebook(page, lab, gateway, "bench.ipynb")
    fixtures.run_cell(page, "%load_ext jupyter_codelia")
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector('#jp-codelia-panel .jp-codelia-kernel[data-state="ready"]')
    return str(page.evaluate(f"() => ({PANEL_JS}).history.route()"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="measurements per lab (median)")
    parser.add_argument("--events", type=int, default=200, help="agent events in the transcript")
    args = parser.parse_args()
    fixtures = load_browser_fixtures()
    kernel_env = {"ANTHROPIC_API_KEY": "unused"}
    if os.environ.get("PYTHONPATH"):
        kernel_env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    session_id = str(uuid.uuid4())
    with (
        fixtures.launch_gateway(kernel_env) as gateway,
        fixtures.launch_lab() as local,
        fixtures.launch_lab(gateway_url=gateway.url) as remote,
        fixtures.launch_browser() as browser,
    ):
        write_session(local.home, session_id, args.events)
        write_session(gateway.home, session_id, args.events)
        pages = {}
        for name, lab, kernels_on in (("local", local, None), ("gateway", remote, gateway)):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            route = open_panel_on_kernel(fixtures, page, lab, kernels_on)
            print(f"{name:>7} kernel: the panel reads sessions through the {route}")
            pages[name] = page
        results: dict[str, list[float]] = {name: [] for name in pages}
        arg = {"sessionId": session_id, "minimum": args.events // 2}
        for page in pages.values():  # warm-up: first requests, code paths, subshell
            page.evaluate(MEASURE_JS, arg)
        for _ in range(args.rounds):
            for name, page in pages.items():  # interleaved, so machine noise hits both alike
                results[name].append(float(page.evaluate(MEASURE_JS, arg)))
    local_ms = statistics.median(results["local"])
    gateway_ms = statistics.median(results["gateway"])
    ratio = gateway_ms / local_ms
    label = f"first paint, {args.events}-event transcript"
    print(f"{label}, local kernel  : {local_ms:7.1f} ms (median)")
    print(f"{label}, gateway kernel: {gateway_ms:7.1f} ms (median)")
    verdict = "OK" if ratio <= TARGET_RATIO else "OVER TARGET"
    print(f"ratio gateway/local: {ratio:.2f}x (target <= {TARGET_RATIO}x) {verdict}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
