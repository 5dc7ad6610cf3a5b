"""The tools that work on the notebook document: ``notebook_read``, ``notebook_edit``,
``notebook_run`` and ``kernel_history``, over the live notebook (through a front end) or the
saved file."""
