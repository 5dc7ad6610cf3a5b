"""Where the side panel reads past sessions: the server's REST endpoints when the server sees the
kernel's own store (same store id), the kernel otherwise."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.session import SessionState, SessionStore, read_store_id

from .conftest import Lab, run_cell
from .test_sidepanel import LOAD, PANEL, open_panel

pytestmark = pytest.mark.browser

PANEL_JS = (
    "Array.from(window.jupyterapp.shell.widgets('right')).find(w => w.id === 'jp-codelia-panel')"
)


def _save_session(home: Path, prompt: str) -> str:
    session_id = str(uuid.uuid4())
    store = SessionStore(home)
    try:
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": "ok"}]
        store.save_state(SessionState(session_id=session_id, messages=messages))
    finally:
        store.close()
    return session_id


def _listed(page: Any) -> list[str]:
    page.locator(f"{PANEL} .jp-codelia-sessions-button").click()
    rows = page.locator(f"{PANEL} .jp-codelia-session")
    page.locator(f"{PANEL} .jp-codelia-session-list").wait_for(state="attached")
    return [row.get_attribute("data-session-id") for row in rows.all()]


def test_a_kernel_sharing_the_servers_store_is_read_over_rest(
    page: Any, lab: Lab, open_notebook: Any
) -> None:
    open_notebook("shared-store.ipynb")
    run_cell(page, LOAD)
    open_panel(page)
    store = page.evaluate(f"() => ({PANEL_JS}).connection.hello.store")
    assert store == {"home": str(lab.home), "store_id": read_store_id(lab.home)}
    assert page.evaluate(f"() => ({PANEL_JS}).history.route()") == "server"
    session_id = _save_session(lab.home, "saved next to the server")
    assert session_id in _listed(page)


def test_a_kernel_with_another_home_is_asked_itself(
    page: Any, lab: Lab, open_notebook: Any, tmp_path: Path
) -> None:
    other = tmp_path / "kernel-home"
    open_notebook("own-store.ipynb")
    run_cell(page, f"{LOAD}\n%config Codelia.home = {str(other)!r}")
    open_panel(page)
    assert page.evaluate(f"() => ({PANEL_JS}).history.route()") == "kernel"
    server_side = _save_session(lab.home, "only the server sees this")
    kernel_side = _save_session(other, "only the kernel sees this")

    listed = _listed(page)

    assert kernel_side in listed
    assert server_side not in listed
    page.locator(f'{PANEL} .jp-codelia-session[data-session-id="{kernel_side}"]').click()
    page.locator(f"{PANEL} .jp-codelia-resume", has_text="Resuming").wait_for()
