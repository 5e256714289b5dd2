"""Which cases of a streamed traces file are in the spill file, and under which key.

:func:`spill_key` names where a case's runs are stored; :class:`RunIndex` says, for one run
number, which cases a load stored: held in memory for the shapes that need it, or asked of the
spill file itself for the mapping shape (a million cases' ids held ~110 MB for the whole run).
Apart from :mod:`assay.results.trace_stream`, which reads the files, so that each stays small.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from assay._internal.spill import Spill, key_under
from assay.results.keys import TraceKey

KIND = "trace"
"""The spill kind traces are stored under."""


def spill_key(prefix: str, key: TraceKey) -> str:
    """The spill key a case's runs are stored under by the load ``prefix`` (the set id's length
    first, so that no two keys read alike)."""
    set_id, eval_id = key
    return key_under(
        prefix, f"-{eval_id}" if set_id is None else f"{len(set_id)}:{set_id}{eval_id}"
    )


class RunIndex(MutableMapping[TraceKey, str]):
    """The cases of one run that are in the spill file, each with the prefix of the load that
    stored it (:func:`spill_key`), in the order they were added.

    A file names one eval set id (None in the mapping shape) for all its cases, as a rule: while
    that holds, the cases are kept as ``{eval_id: prefix}``, without a tuple per case (200,000
    cases held 27.6 MB instead of 33.9); a second set id turns the index into the
    plain ``{(set_id, eval_id): prefix}``, in the same order."""

    def __init__(self) -> None:
        self._set_id: str | None = None
        self._ids: dict[str, str] = {}
        self._keys: dict[TraceKey, str] | None = None
        self._stored: _InSpill | None = None

    @classmethod
    def in_spill(cls, spill: Spill, prefix: str, run: int, count: int) -> RunIndex:
        """The ``count`` cases of the mapping shape (set id None) that the load ``prefix`` put
        into ``spill`` for ``run``, asked of the spill file instead of held (a million cases'
        ids held ~110 MB for the whole run), their ids listed in order there
        (:data:`ORDER_KIND`). Changed (a later file's run of one of them), it is read back into
        memory first."""
        index = cls()
        index._stored = _InSpill(spill, prefix, run, count)
        return index

    def _held(self) -> None:
        """Read an index kept in the spill back into memory, to change it."""
        stored, self._stored = self._stored, None
        if stored is not None:
            self._ids = dict.fromkeys(stored.ids(), stored.prefix)

    def _plain(self) -> dict[TraceKey, str]:
        self._held()
        if self._keys is None:
            self._keys = {(self._set_id, eval_id): p for eval_id, p in self._ids.items()}
            self._ids = {}
        return self._keys

    def get(self, key: TraceKey, default: str | None = None) -> str | None:  # type: ignore[override]
        if self._stored is not None:
            return self._stored.prefix if self._stored.has(key) else default
        if self._keys is not None:
            return self._keys.get(key, default)
        return self._ids.get(key[1], default) if key[0] == self._set_id else default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and self.get(key) is not None

    def __getitem__(self, key: TraceKey) -> str:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __setitem__(self, key: TraceKey, prefix: str) -> None:
        self._held()
        if self._keys is None and not self._ids:
            self._set_id = key[0]
        if self._keys is None and key[0] == self._set_id:
            self._ids[key[1]] = prefix
        else:
            self._plain()[key] = prefix

    def __delitem__(self, key: TraceKey) -> None:
        if key not in self:
            raise KeyError(key)
        self._held()
        if self._keys is not None:
            del self._keys[key]
        else:
            del self._ids[key[1]]

    def __iter__(self) -> Iterator[TraceKey]:
        if self._stored is not None:
            return ((None, eval_id) for eval_id in self._stored.ids())
        if self._keys is not None:
            return iter(self._keys)
        return ((self._set_id, eval_id) for eval_id in self._ids)

    def __len__(self) -> int:
        if self._stored is not None:
            return self._stored.count
        return len(self._ids) if self._keys is None else len(self._keys)

    def __repr__(self) -> str:
        return f"<{len(self)} spilled cases>"


ORDER_KIND = "trace-order"
"""The spill kind a mapping's eval ids are listed under, in file order: key the load's prefix
and the run (:func:`order_key`), index their place, body the id."""


def order_key(prefix: str, run: int) -> str:
    return key_under(prefix, str(run))


class _InSpill:
    """A run's cases as the spill file holds them (see :meth:`RunIndex.in_spill`). The last
    answer is kept: scoring asks about one case three times in a row (is it there, which runs,
    its prefix), each a query otherwise."""

    def __init__(self, spill: Spill, prefix: str, run: int, count: int) -> None:
        self.spill, self.prefix, self.run, self.count = spill, prefix, run, count
        self._last: tuple[TraceKey, bool] | None = None

    def has(self, key: TraceKey) -> bool:
        if key[0] is not None:
            return False
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        found = self.spill.has(KIND, spill_key(self.prefix, key), self.run)
        self._last = (key, found)
        return found

    def ids(self) -> Iterator[str]:
        order = order_key(self.prefix, self.run)
        return (body.decode() for body in self.spill.scan(ORDER_KIND, order))
