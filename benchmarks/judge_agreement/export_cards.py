"""The embedded judge's bundled judge cards, made from a measurement of the test half.

::

    .venv/bin/assay judge agree benchmarks/judge_agreement/labelled/test.labels.yaml \\
        --judge-model local: --history-file /tmp/cards.sqlite --json /tmp/agree.json
    .venv/bin/python benchmarks/judge_agreement/export_cards.py --history /tmp/cards.sqlite

writes ``src/assay/llm/profiles/qwen2.5-coder-1.5b.cards.json``: per criterion of the labels
file, the newest card of the embedded judge measured on exactly this labels file (its sha256),
in the format the run history keeps cards in, its labels file named relative to the
repository. ``assay eval`` shows them beside the embedded judge's verdicts from the first run.

Each card's prompt version is checked against what today's code and bundled profile give for
that criterion (as ``assay eval`` computes it): a card measured before a prompt, metric or
profile change would never be shown, so the script refuses it (exit 2) and says to measure
again. Run it after the bundled profile is final.

``--agree-json FILE`` makes the cards from ``assay judge agree --json`` output instead (the
figures of each criterion, and the judge models the report names): the prompt versions are
then today's, so run it right after the measurement, with the same ``--num-samples`` and
``--judge-profile`` as the measurement (default: the criterion's own and the bundled profile);
the cards are dated by the JSON file's time.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LABELS = REPO / "benchmarks" / "judge_agreement" / "labelled" / "test.labels.yaml"
NOTE = (
    "The embedded judge's agreement with people, measured with assay judge agree on the held-out "
    "test half of benchmarks/judge_agreement (labels_file, labels_sha256) with the bundled "
    "profile; shown beside the embedded judge's verdicts where the prompt version matches. "
    "Written by benchmarks/judge_agreement/export_cards.py: do not edit."
)


class ExportError(Exception):
    """A measurement that cannot be exported (exit 2)."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _shown_path(path: Path) -> str:
    """The labels file as the cards name it: relative to the repository when inside it."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(REPO).as_posix()
    except ValueError:
        return str(resolved)


def _profile_for(option: str | None) -> Any:
    from assay.llm.profile import resolve_profile

    profile = resolve_profile(option)
    return profile.entry_for if profile is not None else None


def expected_version(run: Any, card: Any, profile_for: Any) -> str:
    """The prompt version ``assay eval`` gives ``card``'s criterion with the labels' config, the
    card's number of samples and the profile."""
    from assay.agreement.cards import effective_criterion, prompt_version

    configured = run.config.criteria[card.criterion]
    criterion = effective_criterion(configured, card.num_samples)
    profile = profile_for(card.criterion, card.judge_model) if profile_for else None
    return str(prompt_version(card.criterion, criterion, profile))


def from_history(path: Path, model: str, digest: str) -> list[Any]:
    """The newest card per criterion of ``model`` measured on the labels with ``digest``."""
    from assay.agreement.cards import list_cards
    from assay.history.store import HistoryStore

    if not path.is_file():
        raise ExportError(f"{path}: no such history file")
    with HistoryStore(path) as store:
        cards = list_cards(store)
    newest: dict[str, Any] = {}
    for card in cards:  # newest first
        if card.judge_model == model and card.labels_sha256 == digest:
            newest.setdefault(card.criterion, card)
    return list(newest.values())


def from_agree_json(
    path: Path, run: Any, model: str, num_samples: int | None, profile_for: Any
) -> list[Any]:
    """Cards made from ``assay judge agree --json`` output, with today's prompt versions."""
    import json

    from assay.agreement.agree import AgreeReport
    from assay.agreement.cards import cards_from
    from assay.agreement.stats import Agreement
    from assay.llm.base import TokenUsage

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        figures = {name: _agreement(Agreement, found) for name, found in data["criteria"].items()}
        report = AgreeReport(
            compared=(),
            by_criterion=figures,
            overall=_agreement(Agreement, data["overall"]),
            judges={str(k): str(v) for k, v in data.get("judges", {}).items()},
            usage=TokenUsage(),
            judge_models={str(k): str(v) for k, v in data.get("judge_models", {}).items()},
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExportError(f"{path}: not assay judge agree --json output ({exc})") from None
    models = {name: found for name, found in report.judge_models.items() if found == model}
    cards, skipped = cards_from(
        report,
        run,
        models,
        num_samples=num_samples,
        created=path.stat().st_mtime,
        profile_for=profile_for,
    )
    for why in skipped:
        print(f"warning: {why}", file=sys.stderr)
    return cards


def _agreement(kind: Any, found: dict[str, Any]) -> Any:
    interval = found.get("kappa_interval")
    return kind(
        pairs=int(found["pairs"]),
        judged=int(found["judged"]),
        agree=int(found["agree"]),
        kappa=found.get("kappa"),
        kappa_interval=None if interval is None else (float(interval[0]), float(interval[1])),
        confusion=found.get("confusion", {}),
        person_positive_rate=found.get("person_positive_rate"),
        judge_positive_rate=found.get("judge_positive_rate"),
    )


def export(
    cards: Sequence[Any], run: Any, labels: Path, profile_for: Any, *, check: bool
) -> list[Any]:
    """The cards as shipped: checked against today's prompt versions (with ``check``), the
    labels file named relative to the repository, in the labels file's criterion order."""
    problems = []
    for card in cards:
        want = expected_version(run, card, profile_for)
        if check and card.prompt_version != want:
            problems.append(
                f"{card.criterion}: measured for prompt version {card.prompt_version}, but "
                f"today's code and profile give {want}"
            )
    if problems:
        raise ExportError(
            "cards measured for another prompt than today's (measure the test half again):\n  "
            + "\n  ".join(problems)
        )
    order = list(dict.fromkeys(label.criterion for label in run.labels))
    shown = _shown_path(labels)
    kept = [card.model_copy(update={"labels_file": shown}) for card in cards]
    return sorted(kept, key=lambda card: order.index(card.criterion))


def main(argv: Sequence[str] | None = None) -> int:
    from assay.agreement.cards import CardsFile, bundled_cards_path
    from assay.agreement.labels import load_labels
    from assay.errors import AssayError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--history", type=Path, help="a run history the cards were recorded in")
    source.add_argument("--agree-json", type=Path, help="assay judge agree --json output")
    parser.add_argument("--labels", type=Path, default=LABELS, help="the labels measured on")
    parser.add_argument("--judge-model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--num-samples", type=int, default=None, help="as measured (--agree-json)")
    parser.add_argument("--judge-profile", default=None, help="as measured (default: bundled)")
    parser.add_argument("--out", type=Path, default=None, help="default: the bundled cards file")
    args = parser.parse_args(argv)
    out = args.out or bundled_cards_path()
    try:
        run = load_labels(args.labels)
        profile_for = _profile_for(args.judge_profile)
        if args.history is not None:
            cards = from_history(args.history, args.judge_model, _sha256(args.labels))
        else:
            cards = from_agree_json(
                args.agree_json, run, args.judge_model, args.num_samples, profile_for
            )
        if not cards:
            raise ExportError(f"no card of {args.judge_model} measured on {args.labels}")
        shipped = export(cards, run, args.labels, profile_for, check=args.history is not None)
    except (ExportError, AssayError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    missing = sorted({label.criterion for label in run.labels} - {c.criterion for c in shipped})
    if missing:
        print(f"warning: no card for {', '.join(missing)}", file=sys.stderr)
    text = CardsFile(note=NOTE, cards=shipped).model_dump_json(indent=2)
    out.write_text(text + "\n", encoding="utf-8")
    names = ", ".join(f"{c.criterion} ({c.labels} labels)" for c in shipped)
    print(f"{len(shipped)} card(s) written to {out}: {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
