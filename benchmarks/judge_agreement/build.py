"""Build the labelled judge-agreement set: one eval set, its traces, its config and two labels files.

    .venv/bin/python benchmarks/judge_agreement/build.py [--out DIR]

Reads ``items.yaml`` and every ``set/*.yaml`` beside this script (the items format of
:mod:`labelled`) and writes into ``labelled/`` (or ``--out``):

* ``agreement.evalset.json``: eval set ``judge_agreement``, one case per item (``eval_id`` = the
  item's id), made by :func:`labelled.to_case`: a static case whose conversation is the
  reference (``final_response_match_v2``) or the answer itself, with rubric items' rubrics on the
  case; a scenario case for simulator items;
* ``traces.json``: the actual invocations of every case, in the ``--traces`` format (what
  ``assay eval --save-traces`` writes);
* ``test_config.json``: the eleven judged criteria, one judge sample; threshold 0.5 where no
  verdict depends on it, 0.8 for the three ``multi_turn_*_v1`` (their verdict is the score
  against it) and 3 for ``response_evaluation_score`` (the mean rating; a turn's verdict is
  its rating >= 3);
* ``fit.labels.yaml`` and ``test.labels.yaml``: the human labels (the format of
  :mod:`assay.agreement.labels`), split into a half to fit judges on and a half held out;
* ``README.md``: what the files are and the counts.

The split: every item of ``items.yaml`` goes to fit (judges have been looked at on them). The
items of ``set/`` are grouped by criterion, label (a rubric item by its numbers of yes and no
verdicts) and English or not; within a group they are sorted by the SHA-256 of their id and go
to test, fit, test, fit, ... The output depends on the items only: building twice gives the same
bytes, and a test checks that the committed files are a fresh build.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from assay.evalset import EvalSet, Invocation, write_eval_set

sys.path.insert(0, str(Path(__file__).resolve().parent))  # labelled.py, when loaded by path
from labelled import (
    ALL_CRITERIA,
    COHERENCE,
    CONVERSATION_CRITERIA,
    HALLUCINATIONS,
    ITEMS,
    RUBRIC_MULTI_TURN,
    RUBRIC_RESPONSE,
    RUBRIC_TOOLS,
    SIMULATOR,
    THRESHOLD,
    V2,
    ConvItem,
    Item,
    SimItem,
    load_items,
    rubric_id,
    to_case,
)

HERE = Path(__file__).resolve().parent
SET_DIR = HERE / "set"
OUT = HERE / "labelled"

EVAL_SET_ID = "judge_agreement"
EVAL_SET_FILE = "agreement.evalset.json"
TRACES_FILE = "traces.json"
CONFIG_FILE = "test_config.json"
FIT = "fit"
TEST = "test"
HALVES = (FIT, TEST)
NUM_SAMPLES = 1
CONVERSATION_THRESHOLD = 0.8
"""The ``multi_turn_*_v1`` criteria pass at a score (the share of their five rubrics met) of
0.8: at most one rubric unmet. The judge's verdict on a conversation is that pass or fail."""
COHERENCE_THRESHOLD = 3.0
COMMAND = ".venv/bin/python benchmarks/judge_agreement/build.py"

# --------------------------------------------------------------------------- the items


@dataclass(frozen=True)
class Entry:
    """One item with its criterion and where it came from."""

    criterion: str
    item: Item | SimItem | ConvItem
    source: str
    """The items file's name (``items.yaml``, ``set/hal.yaml``, ...)."""
    old: bool
    """An item of ``items.yaml``: judges have been looked at on it."""

    @property
    def english(self) -> bool:
        """The item is in English (items without ``lang`` are)."""
        return self.item.lang == "en"

    def verdicts(self) -> list[tuple[str | None, bool]]:
        """``(rubric id or None, positive)`` for each labelled unit of the item."""
        item = self.item
        if isinstance(item, SimItem):
            return [(None, item.label)]
        if isinstance(item, ConvItem) and item.label is not None:
            return [(None, item.label)]
        if item.rubrics is not None:
            return [(rubric_id(n), r.verdict) for n, r in enumerate(item.rubrics, 1)]
        return [(None, item.label == ALL_CRITERIA[self.criterion].positive)]

    def stratum(self) -> tuple[str, str, bool]:
        """The group the split balances: criterion, label, English or not."""
        verdicts = [positive for _, positive in self.verdicts()]
        if not isinstance(self.item, SimItem) and self.item.rubrics is not None:
            label = f"{verdicts.count(True)} yes, {verdicts.count(False)} no"
        else:
            label = "positive" if verdicts[0] else "negative"
        return self.criterion, label, self.english


def item_files(items: Path = ITEMS, set_dir: Path = SET_DIR) -> list[Path]:
    """``items.yaml``, then the set's files by name."""
    return [items, *sorted(set_dir.glob("*.yaml"))]


def load_entries(items: Path = ITEMS, set_dir: Path = SET_DIR) -> list[Entry]:
    """Every item of every file, by criterion then file; ValueError on a bad file or a
    repeated id."""
    found: list[Entry] = []
    for path in item_files(items, set_dir):
        source = path.name if path == items else f"{set_dir.name}/{path.name}"
        data = load_items(path)
        old = path == items
        found.extend(Entry(name, item, source, old) for name, item in data.all_items())
    seen: dict[str, str] = {}
    for entry in found:
        if entry.item.id in seen:
            raise ValueError(
                f"item id {entry.item.id} is in {seen[entry.item.id]} and {entry.source}"
            )
        seen[entry.item.id] = entry.source
    order = list(ALL_CRITERIA)
    return sorted(found, key=lambda e: order.index(e.criterion))  # stable: file order kept


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split(entries: Sequence[Entry]) -> dict[str, str]:
    """Each item's half (:data:`FIT` or :data:`TEST`), by item id (see the module docstring)."""
    halves: dict[str, str] = {}
    groups: dict[tuple[str, str, bool], list[Entry]] = {}
    for entry in entries:
        if entry.old:
            halves[entry.item.id] = FIT
        else:
            groups.setdefault(entry.stratum(), []).append(entry)
    for members in groups.values():
        for n, entry in enumerate(sorted(members, key=lambda e: _digest(e.item.id))):
            halves[entry.item.id] = TEST if n % 2 == 0 else FIT
    return halves


# --------------------------------------------------------------------------- the files


def labels_of(entry: Entry) -> list[dict[str, Any]]:
    """The item's labels in the labels-file format, one per labelled unit."""
    criterion = ALL_CRITERIA[entry.criterion]
    item = entry.item
    turn = 1
    if isinstance(item, SimItem):
        turn = item.labelled_turn
    elif isinstance(item, ConvItem):
        turn = len(item.turns)  # judged once on the whole conversation: its last turn
    out = []
    for rubric, positive in entry.verdicts():
        label: dict[str, Any] = {"case": item.id, "invocation": turn, "criterion": entry.criterion}
        if rubric is not None:
            label["rubric"] = rubric
        label["label"] = criterion.positive if positive else criterion.negative
        if item.note:
            label["reason"] = item.note
        out.append(label)
    return out


def _judged(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "threshold": THRESHOLD,
        "judge_model_options": {"num_samples": NUM_SAMPLES},
        **(extra or {}),
    }


def config() -> dict[str, Any]:
    """``test_config.json``: every labelled criterion, as ``run.py`` scores them (threshold
    0.5 where no verdict depends on it; see :data:`CONVERSATION_THRESHOLD` and
    :data:`COHERENCE_THRESHOLD`). Rubrics are on the cases, so the rubric criteria have none."""
    return {
        "criteria": {
            V2: _judged(),
            RUBRIC_RESPONSE: _judged(),
            RUBRIC_TOOLS: _judged(),
            HALLUCINATIONS: _judged({"evaluate_intermediate_nl_responses": False}),
            "safety_v1": {"threshold": THRESHOLD},
            SIMULATOR: _judged({"stop_signal": "</finished>"}),
            RUBRIC_MULTI_TURN: _judged(),
            **{
                name: {"threshold": CONVERSATION_THRESHOLD}
                for name in CONVERSATION_CRITERIA
                if name != RUBRIC_MULTI_TURN
            },
            COHERENCE: {"threshold": COHERENCE_THRESHOLD},
        }
    }


def _dump(invocations: list[Invocation]) -> list[dict[str, Any]]:
    return [i.model_dump(mode="json", exclude_none=True) for i in invocations]


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _labels_file(half: str, labels: list[dict[str, Any]]) -> str:
    other = TEST if half == FIT else FIT
    header = (
        f"# The {half} half of the judge-agreement labels: generated by build.py from items.yaml and\n"
        f"# set/*.yaml; do not edit (change the items and run {COMMAND}).\n"
        f"# The {other} half is {other}.labels.yaml; the split is in README.md.\n"
    )
    body = {"eval_set": EVAL_SET_FILE, "traces": TRACES_FILE, "labels": labels}
    text = yaml.safe_dump(body, allow_unicode=True, sort_keys=False, width=100)
    return header + text


@dataclass(frozen=True)
class Counts:
    """One criterion's (or all criteria's) figures: items and labels per half."""

    criterion: str
    items: dict[str, int]
    labels: dict[str, tuple[int, int]]
    """Per half, the positive and negative labels."""
    non_english: dict[str, int]

    def row(self) -> list[str]:
        """The README table's row."""
        fit_pos, fit_neg = self.labels[FIT]
        test_pos, test_neg = self.labels[TEST]
        return [
            f"`{self.criterion}`" if self.criterion != "all" else "all",
            str(self.items[FIT] + self.items[TEST]),
            f"{self.items[FIT]} / {self.items[TEST]}",
            f"{fit_pos + test_pos} / {fit_neg + test_neg}",
            f"{fit_pos} / {fit_neg}",
            f"{test_pos} / {test_neg}",
            f"{self.non_english[FIT]} / {self.non_english[TEST]}",
        ]


HEADER = [
    "criterion",
    "items",
    "items fit / test",
    "labels + / -",
    "fit + / -",
    "test + / -",
    "non-English items fit / test",
]


def count(entries: Sequence[Entry], halves: dict[str, str]) -> list[Counts]:
    """Per criterion, then for all of them: items, labels and non-English items per half."""
    rows = []
    for name in [*ALL_CRITERIA, "all"]:
        chosen = [e for e in entries if name in ("all", e.criterion)]
        items = {h: 0 for h in HALVES}
        labels = {h: (0, 0) for h in HALVES}
        non_english = {h: 0 for h in HALVES}
        for entry in chosen:
            half = halves[entry.item.id]
            items[half] += 1
            non_english[half] += not entry.english
            pos, neg = labels[half]
            verdicts = [positive for _, positive in entry.verdicts()]
            labels[half] = (pos + verdicts.count(True), neg + verdicts.count(False))
        if chosen:
            rows.append(Counts(name, items, labels, non_english))
    return rows


def table(rows: Sequence[Counts]) -> str:
    """The counts as a Markdown table."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(r.row()) + " |" for r in rows]
    return "\n".join(lines) + "\n"


_README = """\
# The labelled judge-agreement set

Generated by `build.py`; do not edit these files by hand. Change `../items.yaml` or `../set/*.yaml`
and run

```
{command}
```

(`tests/benchmarks/test_labelled_set.py` checks that these files are a fresh build.)

| file | what it is |
| --- | --- |
| `{eval_set}` | eval set `{eval_set_id}`: one case per item, `eval_id` = the item's id. A `final_response_match_v2` case's conversation is the reference; the other static cases hold the answer itself; rubric items carry their rubrics on the case (ids `r1`, `r2`, ... with the criterion's rubric type); simulator items are scenario cases (starting prompt, conversation plan); conversation items (the four criteria judged on the whole conversation) are static cases of several turns. |
| `{traces}` | the recorded run the labels are on (`--traces` format): per case, the actual invocations (the prompt, the tool calls and their responses as invocation events, the tool declarations and instructions as app details, the answer); a simulator item's or a conversation item's turns, one invocation each. |
| `{config}` | the eleven judged criteria, one judge sample; threshold 0.5 where no verdict depends on it, {conversation_threshold} for the three `multi_turn_*_v1` (a conversation's verdict is its score against it) and {coherence_threshold:g} for `response_evaluation_score` (a turn's verdict is its rating >= 3); `hallucinations_v1` without intermediate responses, `per_turn_user_simulator_quality_v1` with the stop signal `</finished>`. |
| `fit.labels.yaml` | the labels to fit a judge on (prompts, thresholds): every item of `items.yaml` and about half of the `set/` items. |
| `test.labels.yaml` | the held-out labels: the other half of the `set/` items. Measure a judge on them once it is fitted, and do not tune on them. |

Each label is `{{case, invocation, criterion, label, reason}}` in the format of
`assay.agreement.labels` (`invocation` is 1, the labelled turn of a simulator item, or the
last turn of a conversation item; rubric items have one label per rubric, with `rubric`;
`reason` is the item's note).
`hallucinations_v1` labels are answer-level (`grounded` / `ungrounded`, no `sentence`). Score a
half with

```
.venv/bin/assay judge agree benchmarks/judge_agreement/labelled/test.labels.yaml --judge-model MODEL
```

## The split

Every item of `items.yaml` is in fit: judges and prompts have already been looked at on them.
The items of `set/` are grouped by criterion, label (a rubric item by its numbers of yes and no
verdicts) and language (English or not). Within a group the items are sorted by the SHA-256 of
their id and dealt out test, fit, test, fit, ... So the test half holds about half of the new
items of each criterion, label and language, and an item's half changes only when its group
does.

## Counts

Items, and labels (+ positive: valid, yes, grounded, safe, coherent; - negative); a rubric item gives one
label per rubric. Items without `lang` (all of `items.yaml`) count as English, though a few of
them are in Chinese, Japanese or Spanish.

{table}"""


def readme(rows: Sequence[Counts]) -> str:
    """``README.md`` of the output folder."""
    return _README.format(
        command=COMMAND,
        eval_set=EVAL_SET_FILE,
        eval_set_id=EVAL_SET_ID,
        traces=TRACES_FILE,
        config=CONFIG_FILE,
        conversation_threshold=CONVERSATION_THRESHOLD,
        coherence_threshold=COHERENCE_THRESHOLD,
        table=table(rows),
    )


def build(out: Path, items: Path = ITEMS, set_dir: Path = SET_DIR) -> list[Counts]:
    """Write the labelled set into ``out`` (created if need be); the counts per criterion."""
    entries = load_entries(items, set_dir)
    halves = split(entries)
    cases = []
    traces: dict[str, list[dict[str, Any]]] = {}
    labels: dict[str, list[dict[str, Any]]] = {h: [] for h in HALVES}
    for entry in entries:
        actual, _, case = to_case(entry.item, entry.criterion)
        cases.append(case)
        traces[entry.item.id] = _dump(actual if isinstance(actual, list) else [actual])
        labels[halves[entry.item.id]].extend(labels_of(entry))
    eval_set = EvalSet(
        eval_set_id=EVAL_SET_ID,
        name="Judge agreement: labelled items",
        description=(
            "One case per labelled item of benchmarks/judge_agreement (items.yaml, set/*.yaml); "
            "generated by build.py."
        ),
        eval_cases=cases,
    )
    rows = count(entries, halves)
    out.mkdir(parents=True, exist_ok=True)
    write_eval_set(eval_set, out / EVAL_SET_FILE)
    (out / TRACES_FILE).write_text(_json(traces), encoding="utf-8")
    (out / CONFIG_FILE).write_text(_json(config()), encoding="utf-8")
    for half in HALVES:
        (out / f"{half}.labels.yaml").write_text(_labels_file(half, labels[half]), encoding="utf-8")
    (out / "README.md").write_text(readme(rows), encoding="utf-8")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=OUT, help="the folder to write (labelled/)")
    args = parser.parse_args(argv)
    try:
        rows = build(args.out)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    print(table(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
