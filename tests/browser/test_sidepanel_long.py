"""The side panel with a long transcript, in real JupyterLab + Chromium: cards open and close
with a header button (no ``<details>``, whose per-element style work made appends slow), off-screen
blocks are skipped by the browser, and the view follows the bottom only while the reader is there.

Events go in through the panel's public ``ingest`` (as in bench/sidepanel.py), so no kernel is
needed and thousands of events take a moment."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Lab, open_lab

pytestmark = pytest.mark.browser

PANEL = "#jp-codelia-panel"
VIEW = f"{PANEL} .jp-codelia-transcript"

# Installs window.codeliaBench: `cards(n)` adds n finished tool cards, `frames()` resolves once
# two frames were drawn (the view's scroll to the bottom and content-visibility both ran).
SETUP_JS = """() => {
  const panel = Array.from(window.jupyterapp.shell.widgets('right'))
    .find(w => w.id === 'jp-codelia-panel');
  window.jupyterapp.shell.activateById(panel.id);
  panel.view.apply(panel.transcript.reset());
  let seq = 0;
  let call = 0;
  const send = event => panel.ingest({ type: 'agent.event', run_id: 'long', seq: seq++, event });
  panel.ingest({ type: 'run.started', run_id: 'long', session_id: null, prompt: 'long',
                 source: 'panel' });
  const frame = () => new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve)));
  window.codeliaBench = {
    send,
    cards(n) {
      for (let i = 0; i < n; i++) {
        call += 1;
        send({ type: 'tool_call', tool: 'read', args: { file_path: `f${call}.py` },
               tool_call_id: `c${call}` });
        send({ type: 'tool_result', tool: 'read', result: `    1  x = ${call}`,
               tool_call_id: `c${call}` });
      }
    },
    async frames() { await frame(); await frame(); },
  };
}"""

# How far the view is from its bottom, in pixels.
GAP_TO_BOTTOM_JS = "el => el.scrollHeight - el.scrollTop - el.clientHeight"


def open_empty_panel(page: Any, lab: Lab) -> None:
    open_lab(page, lab)
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector(VIEW)
    page.evaluate(SETUP_JS)


def test_cards_thinking_and_results_open_and_close_with_a_button(page: Any, lab: Lab) -> None:
    open_empty_panel(page, lab)
    page.evaluate(
        """async () => {
          const bench = window.codeliaBench;
          bench.send({ type: 'reasoning', content: 'Weighing the options' });
          bench.cards(1);
          bench.send({ type: 'tool_call', tool: 'bash', args: { command: 'false' },
                       tool_call_id: 'bad' });
          bench.send({ type: 'tool_result', tool: 'bash', result: 'exit status 1',
                       is_error: true, tool_call_id: 'bad' });
          await bench.frames();
        }"""
    )
    # A transcript of thousands of items holds none: each costs style work on every append.
    assert page.locator(f"{VIEW} details").count() == 0

    card = page.locator(f"{VIEW} .jp-codelia-tool", has_text="read")
    header = card.locator(".jp-codelia-tool-header")
    body = card.locator(".jp-codelia-tool-body")
    assert header.get_attribute("aria-expanded") == "false"
    assert body.is_hidden()
    header.click()
    assert header.get_attribute("aria-expanded") == "true"
    assert body.is_visible()
    # The body is built on opening: the arguments and the (closed) result.
    assert "f1.py" in body.inner_text()
    result = body.locator(".jp-codelia-result")
    assert result.locator(".jp-codelia-disclosure-header").inner_text() == "Result (12 chars)"
    assert result.locator(".jp-codelia-result-text").is_hidden()
    result.locator(".jp-codelia-disclosure-header").click()
    assert result.locator(".jp-codelia-result-text").inner_text() == "    1  x = 1"
    header.click()
    assert header.get_attribute("aria-expanded") == "false"
    assert body.is_hidden()

    # The header is a real button: the keyboard opens and closes it too.
    header.focus()
    page.keyboard.press("Enter")
    assert body.is_visible()
    page.keyboard.press("Space")
    assert body.is_hidden()

    # A failed call opens itself, with its error shown.
    failed = page.locator(f"{VIEW} .jp-codelia-tool", has_text="bash")
    assert failed.locator(".jp-codelia-tool-header").get_attribute("aria-expanded") == "true"
    assert failed.locator(".jp-mod-error").inner_text() == "exit status 1"

    thinking = page.locator(f"{VIEW} .jp-codelia-thinking")
    thinking_header = thinking.locator(".jp-codelia-disclosure-header")
    assert thinking_header.inner_text() == "Thinking"
    assert thinking.locator(".jp-codelia-disclosure-body").is_hidden()
    thinking_header.click()
    assert thinking.locator(".jp-codelia-disclosure-body").inner_text().strip() == (
        "Weighing the options"
    )


def test_a_long_transcript_follows_the_bottom_and_keeps_a_scrolled_up_readers_place(
    page: Any, lab: Lab
) -> None:
    open_empty_panel(page, lab)
    view = page.locator(VIEW).element_handle()
    page.evaluate(
        "async () => { window.codeliaBench.cards(1500); await window.codeliaBench.frames(); }"
    )
    assert view.evaluate(GAP_TO_BOTTOM_JS) < 48
    # Blocks far above the viewport are skipped by the browser; the newest card is drawn.
    assert page.evaluate(
        """() => {
          const view = document.querySelector('#jp-codelia-panel .jp-codelia-transcript');
          const cards = view.querySelectorAll('.jp-codelia-tool');
          const block = cards[0].closest('.jp-codelia-block');
          return [
            cards.length,
            getComputedStyle(block).contentVisibility,
            cards[0].checkVisibility({ contentVisibilityAuto: true }),
            cards[cards.length - 1].checkVisibility({ contentVisibilityAuto: true }),
          ];
        }"""
    ) == [1500, "auto", False, True]

    # Following: each new card is scrolled into view.
    for _ in range(3):
        page.evaluate(
            "async () => { window.codeliaBench.cards(5); await window.codeliaBench.frames(); }"
        )
        assert view.evaluate(GAP_TO_BOTTOM_JS) < 48

    # The reader scrolls up to card 700: new events do not move what they are reading.
    read_js = """el => {
      const card = el.querySelectorAll('.jp-codelia-tool')[700];
      return [card.getBoundingClientRect().top - el.getBoundingClientRect().top, el.scrollTop];
    }"""
    view.evaluate(
        "el => el.querySelectorAll('.jp-codelia-tool')[700].scrollIntoView({ block: 'center' })"
    )
    page.evaluate("() => window.codeliaBench.frames()")
    page.wait_for_timeout(200)  # the scroll event reached the view
    before = view.evaluate(read_js)
    assert 0 < before[0] < 900 and before[1] > 0, before
    page.evaluate(
        "async () => { window.codeliaBench.cards(200); await window.codeliaBench.frames(); }"
    )
    after = view.evaluate(read_js)
    assert abs(after[0] - before[0]) < 2 and abs(after[1] - before[1]) < 2, (before, after)
    assert view.evaluate(GAP_TO_BOTTOM_JS) > 1000

    # Back at the bottom, the view follows again.
    view.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.evaluate("() => window.codeliaBench.frames()")
    page.wait_for_timeout(200)
    page.evaluate(
        "async () => { window.codeliaBench.cards(5); await window.codeliaBench.frames(); }"
    )
    assert view.evaluate(GAP_TO_BOTTOM_JS) < 48
    newest = page.locator(f"{VIEW} .jp-codelia-tool").last
    assert newest.evaluate("el => el.checkVisibility({ contentVisibilityAuto: true })")
