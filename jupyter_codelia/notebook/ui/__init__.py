"""What codelia draws in a cell: the run panel and its cards, the static form that replaces a
finished panel, the output-cache browser and the job cards.

This room imports nothing from ``run/`` or the tool packages: it draws what it is given.
"""
