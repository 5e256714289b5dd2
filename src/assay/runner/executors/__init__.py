"""Where a run's cases run: the :class:`~assay.runner.executors.base.Executor` protocol, this
process (:mod:`~assay.runner.executors.local`) and a Ray cluster
(:mod:`~assay.runner.executors.ray`, which imports Ray only when a run starts)."""
