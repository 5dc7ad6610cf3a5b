"""``python -m jupyter_codelia.acp``: the same as ``codelia-acp``."""

from . import main

if __name__ == "__main__":  # importing the module (the error-hierarchy walk) starts nothing
    main()
