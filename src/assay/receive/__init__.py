"""``assay receive``: a live OTLP/HTTP receiver that scores agent sessions as they end.

:mod:`assay.receive.buffer` keeps received spans in a SQLite file until their session closes,
:mod:`assay.receive.scoring` scores closed sessions with a config and records them in one
long-lived run of the history, :mod:`assay.receive.server` is the HTTP side (``/v1/traces``).
"""
