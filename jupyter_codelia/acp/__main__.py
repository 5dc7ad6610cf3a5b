"""``python -m jupyter_codelia.acp``: the same as ``codelia-acp``."""

from . import main

main()
