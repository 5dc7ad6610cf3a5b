"""Driving a run in the kernel: the notebook's agent (:class:`NotebookAgent`), blocking and
background turns, the sink that carries a run's events to its panel and every open comm, what a
cell returns, and the ``job.updated`` notices for the side panel."""
