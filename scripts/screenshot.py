"""Retake docs/screenshot.png: data-analysis.ipynb run offline in JupyterLab with the side panel.

Uses the browser-test launchers (real JupyterLab, Debian Chromium), runs the notebook top to
bottom with no API key (its clearly labelled offline demo answers), opens the Codelia side panel
and saves a screenshot of the whole window, so the README always shows the current UI.

    .venv/bin/python scripts/screenshot.py [--out docs/screenshot.png]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshot.png")
    args = parser.parse_args()
    for name in [k for k in os.environ if k.startswith(("ANTHROPIC_", "OPENAI_"))]:
        del os.environ[name]  # the offline demo, never a real service
    sys.path.insert(0, str(REPO / "bench"))
    from _browser import load_browser_fixtures

    fixtures = load_browser_fixtures()
    with fixtures.launch_lab() as lab, fixtures.launch_browser() as browser:
        shutil.copytree(REPO / "notebooks" / "data", lab.root / "data")
        shutil.copy(REPO / "notebooks" / "data-analysis.ipynb", lab.root / "data-analysis.ipynb")
        page = browser.new_page(viewport={"width": 1500, "height": 950})
        fixtures.open_lab(page, lab, "data-analysis.ipynb")
        page.wait_for_function(fixtures.WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(
            "() => document.querySelectorAll('.jp-Notebook .jp-InputArea-prompt').length > 0 && "
            "Array.from(document.querySelectorAll('.jp-Notebook .jp-InputArea-prompt'))"
            ".every(p => !p.textContent.includes('*'))",
            timeout=180_000,
            polling=500,
        )
        page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
        page.wait_for_selector('#jp-codelia-panel .jp-codelia-kernel[data-state="ready"]')
        page.locator("#jp-codelia-panel .jp-codelia-final").last.wait_for(timeout=60_000)
        # Show the plot the agent made: scroll the notebook to the first analysis cell's output.
        page.locator(".jp-Notebook .jp-OutputArea-output img").first.scroll_into_view_if_needed()
        page.wait_for_timeout(800)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
