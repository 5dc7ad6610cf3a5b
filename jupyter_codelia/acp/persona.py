"""codelia in Jupyter AI's chat: a persona that runs ``codelia-acp`` (jupyter-ai 3).

Registered under the ``jupyter_ai.personas`` entry point group, so Jupyter AI lists "codelia"
among its personas; only Jupyter AI imports this module. Where its ACP client package is missing
the import raises Jupyter AI's ``PersonaRequirementsUnmet`` (it skips the persona quietly), and
without Jupyter AI at all nothing ever imports it.

Jupyter AI starts the agent as a child of the Jupyter server, so ``codelia-acp`` finds that
server by its own parent process (see ``_jupyter.find_server``) and runs prompts in its kernels.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

try:
    from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
    from jupyter_ai_persona_manager import PersonaDefaults
except ImportError as missing:
    from jupyter_ai_persona_manager import PersonaRequirementsUnmet

    raise PersonaRequirementsUnmet(
        f"the codelia persona needs jupyter-ai-acp-client ({missing}): pip install jupyter-ai"
    ) from missing

AVATAR = Path(__file__).with_name("codelia.svg")
NAME = "codelia"


def agent_command() -> list[str]:
    """The command Jupyter AI starts: this interpreter's ``codelia-acp``."""
    return [sys.executable, "-m", "jupyter_codelia.acp"]


class CodeliaPersona(BaseAcpPersona):  # type: ignore[misc]  # jupyter-ai has no type hints
    """codelia as a Jupyter AI persona: its chat messages run in the notebook's kernel."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, executable=agent_command(), **kwargs)

    @property
    def defaults(self) -> Any:
        return PersonaDefaults(
            name=NAME,
            description=(
                "The codelia agent, running in your notebook's kernel: it sees your live "
                "variables, runs Python there, edits files and notebooks, and asks before "
                "anything risky."
            ),
            avatar_path=str(AVATAR),
            system_prompt="unused",  # the kernel's agent has its own
        )
