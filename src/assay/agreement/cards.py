"""Judge cards: how far a judge agrees with people, kept in the run history and shown beside its
verdicts.

``assay judge agree LABELS`` records a card per criterion it measured (unless ``--no-record``):
the judge model (as ``--judge-model`` takes it), the judge in words, the criterion, the prompt
version, the labels file (path and sha256), the figures (labels, judged, agreement, kappa and its
95% interval, people's and the judge's positive rates, the confusion table), ``num_samples``,
assay's version and the time. ``assay eval`` looks up, per judged criterion, the cards of the
same judge model, criterion and prompt version, and shows one beside the verdicts
(:func:`attach_agreement`, chosen by :func:`choose_card`).

The embedded judge's own agreement ships with assay: **bundled cards**
(``src/assay/llm/profiles/<model>.cards.json``, :func:`bundled_cards`), one per judged criterion,
measured on the test half of ``benchmarks/judge_agreement`` (made by
``benchmarks/judge_agreement/export_cards.py``), so a first run shows them with no history. A
history card is shown instead only when it is from at least as many labels. A card from fewer
than :data:`~assay.results.model.FEW_AGREEMENT_LABELS` labels never displaces a card from more
labels, however new. Where the embedded judge has a bundled card for the criterion but for
another prompt version (other options or profile), none is shown, and the results say
which version it was measured for (``other_prompt_version``).

The **prompt version** (:func:`prompt_version`) is a short sha256 of what decides the judge's
label of a unit besides the model: the criterion's prompt module (its system and user templates
and answer schema, :mod:`assay.metrics.prompts`, as source text), the constants of its metric
module (the labels and the patterns its answers are read with), the criterion's options that
reach the judge or the vote (``num_samples``, ``judge_model_config``, stop signal; not the
threshold, not the judge model, which the card names on its own) and, when one is given, the
judge-alignment profile of that criterion. A change to any of them makes earlier cards stop
matching: an agreement measured on another prompt is not shown as this one's. A criterion's
``rubrics`` are not part of it: a rubric is what the judge is asked about, its input, as the
rubrics an eval case carries are (the bundled cards were measured over many rubrics, each item
its own), so a config that writes its rubrics in ``test_config.json`` is measured by the same
card as one that writes them in its cases.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from assay._version import __version__
from assay.config import BaseCriterion, EvalConfig, LlmAsAJudgeCriterion
from assay.errors import format_path
from assay.history.records import HistoryError
from assay.history.store import HistoryStore
from assay.metrics.registry import declaration_of
from assay.results.model import FEW_AGREEMENT_LABELS, SIMULATOR, EvalSetResult, JudgeAgreement

if TYPE_CHECKING:
    from assay.agreement.agree import AgreeReport
    from assay.agreement.labels import LabelledRun

ProfileFor = Callable[[str, str], Mapping[str, Any] | None]
"""The judge-alignment profile entry applied to a criterion's judge (criterion, judge model),
or None when none was."""


_FORMAT = 1
"""Bumped when what :func:`prompt_version` hashes changes shape."""
_VERDICT_OPTIONS = ("judge_model_config", "num_samples")
"""The judge options that change verdicts (not the model, not the parallelism)."""


def prompt_version(
    criterion_name: str, criterion: BaseCriterion, profile: Mapping[str, Any] | None = None
) -> str:
    """A short sha256 (12 hex digits) of the criterion's prompts and the options that change its
    verdicts, and of ``profile`` (the criterion's judge-alignment profile entry) when given."""
    declared = declaration_of(criterion_name)
    parts: dict[str, Any] = {
        "format": _FORMAT,
        "criterion": criterion_name,
        "options": _verdict_options(criterion),
    }
    if declared is not None and declared.prompts is not None:
        parts["prompts"] = _source(f"assay.metrics.prompts.{declared.prompts}")
        parts["metric"] = _constants(declared.metric.__module__)
    if declared is not None and declared.shared_prompts is not None:
        parts["shared_prompts"] = _source(f"assay.metrics.prompts.{declared.shared_prompts}")
    if _decided_by_threshold(criterion_name):
        parts["threshold"] = criterion.threshold
    if profile is not None:
        parts["profile"] = profile
    text = json.dumps(
        parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _decided_by_threshold(criterion_name: str) -> bool:
    """Whether the judge's label is its score against the criterion's threshold (people's labels
    are on the conversation): the threshold is then part of what a card measured."""
    declared = declaration_of(criterion_name)
    labelling = declared.labelling if declared is not None else None
    return labelling is not None and labelling.threshold is None


def _verdict_options(criterion: BaseCriterion) -> dict[str, Any]:
    data = criterion.model_dump(mode="json")
    data.pop("threshold", None)
    data.pop("rubrics", None)  # the judge's input, not its prompt (see the module docs)
    for key in criterion.ignored_keys:  # keys no metric reads change no verdict
        data.pop(key, None)
    options = data.pop("judge_model_options", None)
    if isinstance(options, dict):
        data["judge_model_options"] = {key: options.get(key) for key in _VERDICT_OPTIONS}
    return data


def _plain(value: Any) -> Any:
    """JSON for what ``json`` cannot write itself (a profile given as a model, a set)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(f"cannot hash a {type(value).__name__} into a prompt version")


def _source(name: str) -> str:
    """A module's source text, line endings made plain (a checkout's CRLF changes nothing)."""
    module = importlib.import_module(name)
    file = getattr(module, "__file__", None)
    if not file or not str(file).endswith(".py"):
        return json.dumps(_constants(name), sort_keys=True, default=_plain)
    return Path(file).read_text(encoding="utf-8").replace("\r\n", "\n")


_SKIP = object()


def _constants(name: str) -> dict[str, Any]:
    """A module's immutable constants (strings, numbers, tuples and frozensets of them, compiled
    patterns): the labels and patterns a metric reads its judge's answers with."""
    module: ModuleType = importlib.import_module(name)
    found: dict[str, Any] = {}
    for key, value in vars(module).items():
        if key.startswith("__"):
            continue
        frozen = _frozen(value)
        if frozen is not _SKIP:
            found[key] = frozen
    return found


def _frozen(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, re.Pattern):
        return {"pattern": str(value.pattern), "flags": int(value.flags)}
    if isinstance(value, tuple | frozenset):
        items = [_frozen(item) for item in value]
        if any(item is _SKIP for item in items):
            return _SKIP
        if isinstance(value, frozenset):
            items.sort(key=lambda item: json.dumps(item, sort_keys=True))
        return items
    return _SKIP


class JudgeCard(BaseModel):
    """One judge measured against people's labels on one criterion."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judge_model: str
    """As ``--judge-model`` takes it (``local:qwen2.5-coder-1.5b``, ``openai:gpt-4o-mini``)."""
    judge: str
    """The judge in words, with why it was chosen."""
    criterion: str
    prompt_version: str
    labels_file: str
    labels_sha256: str
    labels: int
    judged: int
    agree: int
    agreement: float | None = None
    kappa: float | None = None
    kappa_interval: tuple[float, float] | None = None
    person_positive_rate: float | None = None
    judge_positive_rate: float | None = None
    confusion: dict[str, dict[str, int]] = {}
    num_samples: int | None = None
    assay_version: str
    created: float
    """When it was measured (seconds since the epoch)."""

    @property
    def key(self) -> tuple[str, str, str]:
        """What it is looked up by: judge model, criterion, prompt version."""
        return (self.judge_model, self.criterion, self.prompt_version)

    @property
    def date(self) -> str:
        """When it was measured, ISO 8601 in UTC (``2026-03-01T12:00:00Z``)."""
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created))

    def agreement_info(self, *, bundled: bool = False) -> JudgeAgreement:
        """Its figures as the results carry them beside a judged metric (``bundled``: a card
        shipped with assay)."""
        return JudgeAgreement(
            labels=self.labels,
            judged=self.judged,
            agreement=self.agreement,
            kappa=self.kappa,
            kappa_interval=self.kappa_interval,
            person_positive_rate=self.person_positive_rate,
            judge_positive_rate=self.judge_positive_rate,
            prompt_version=self.prompt_version,
            card_date=self.date,
            labels_file=self.labels_file,
            labels_sha256=self.labels_sha256,
            bundled=bundled,
        )


def _card(text: str, path: Path) -> JudgeCard:
    try:
        return JudgeCard.model_validate_json(text)
    except ValidationError as exc:
        raise HistoryError(
            f"{path}: an unreadable judge card ({exc.error_count()} problem(s)); it may have "
            "been written by a newer assay"
        ) from None


def record_cards(store: HistoryStore, cards: Iterable[JudgeCard]) -> None:
    """Keep ``cards`` in the history."""
    for card in cards:
        store.add_judge_card(card.key, card.created, card.model_dump_json())


def list_cards(store: HistoryStore, limit: int | None = None) -> list[JudgeCard]:
    """The history's judge cards, newest first."""
    return [_card(text, store.path) for text in store.judge_cards(limit)]


def find_card(
    store: HistoryStore, judge_model: str, criterion: str, version: str
) -> JudgeCard | None:
    """The newest card of this judge model, criterion and prompt version; None when none."""
    text = store.judge_card((judge_model, criterion, version))
    return None if text is None else _card(text, store.path)


def choose_card(history: Sequence[JudgeCard], bundled: JudgeCard | None) -> JudgeCard | None:
    """The card to show of those of one judge model, criterion and prompt version: ``history``
    (newest first) and the ``bundled`` one, if any. A history card is considered only when it
    is from at least as many labels as the bundled one; of those, the newest from
    :data:`~assay.results.model.FEW_AGREEMENT_LABELS` labels or more, else the one from the
    most labels (the newest of equals): a card from too few labels never displaces a larger
    one. With none, the bundled card."""
    floor = bundled.labels if bundled is not None else 0
    eligible = [card for card in history if card.labels >= floor]
    if not eligible:
        return bundled
    enough = next((card for card in eligible if card.labels >= FEW_AGREEMENT_LABELS), None)
    return enough or max(eligible, key=lambda card: card.labels)


# -- the cards shipped with assay ------------------------------------------------------------

CARDS_FORMAT: Literal["assay-judge-cards/1"] = "assay-judge-cards/1"


class CardsFile(BaseModel):
    """A file of judge cards shipped with assay: the embedded judge's agreement with people,
    one card per criterion (``benchmarks/judge_agreement/export_cards.py`` writes it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["assay-judge-cards/1"] = CARDS_FORMAT
    note: str | None = None
    """What the cards are and how they were made, for a person reading the file."""
    cards: list[JudgeCard]


class CardsError(HistoryError):
    """A judge cards file that cannot be read; shown as an unreadable history is (a warning,
    and no agreement beside the verdicts)."""


def bundled_cards_path(folder: Path | None = None) -> Path:
    """Where the embedded judge's bundled cards are: beside its bundled profile."""
    from assay.llm.models import DEFAULT_MODEL
    from assay.llm.profile import BUNDLED

    return (BUNDLED if folder is None else folder) / f"{DEFAULT_MODEL.name}.cards.json"


def load_cards_file(path: Path) -> list[JudgeCard]:
    """The cards of a judge cards file; a malformed one is a :class:`CardsError` naming the
    file and the first problem's JSON path."""
    try:
        return list(CardsFile.model_validate_json(path.read_bytes()).cards)
    except OSError as exc:
        raise CardsError(f"{path}: cannot read the judge cards: {exc.strerror or exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = format_path(first["loc"]) or "(the top level)"
        raise CardsError(
            f"{path}: not a judge cards file ({exc.error_count()} problem(s); at {where}: "
            f"{first['msg']})"
        ) from None


def bundled_cards(folder: Path | None = None) -> list[JudgeCard]:
    """The embedded judge's bundled cards; none when the file is not there."""
    path = bundled_cards_path(folder)
    return load_cards_file(path) if path.is_file() else []


# -- cards from `assay judge agree` ----------------------------------------------------------


def effective_criterion(criterion: BaseCriterion, num_samples: int | None) -> BaseCriterion:
    """The criterion as ``assay judge agree --num-samples`` scores it."""
    if num_samples is None or not isinstance(criterion, LlmAsAJudgeCriterion):
        return criterion
    options = criterion.judge_model_options.model_copy(update={"num_samples": num_samples})
    return criterion.model_copy(update={"judge_model_options": options})


def judge_models(
    report: AgreeReport,
    run: LabelledRun,
    override: str | None,
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Per criterion of ``report``, the judge model that scored it, as ``--judge-model`` takes
    it. The report names its judges in words only, so the choice is made again as the judge
    pool made it (the same override, environment and criterion), and kept only where it names
    the judge the report names."""
    given = getattr(report, "judge_models", None)  # when AgreeReport carries them
    if isinstance(given, Mapping):
        return {str(name): str(model) for name, model in given.items()}
    from assay.llm.selection import choose_judge_model, describe_judge, judged_model

    source = os.environ if env is None else env
    found: dict[str, str] = {}
    for name in report.by_criterion:
        choice = choose_judge_model(run.config.criteria.get(name), override=override, env=source)
        if isinstance(choice, str) or report.judges.get(name) != describe_judge(choice):
            continue
        found[name] = judged_model(choice.model)
    return found


def cards_from(
    report: AgreeReport,
    run: LabelledRun,
    models: Mapping[str, str],
    *,
    num_samples: int | None = None,
    created: float | None = None,
    profile_for: ProfileFor | None = None,
) -> tuple[list[JudgeCard], list[str]]:
    """A card per criterion ``report`` measured, and why any other was not given one (its judge
    gave no label at all, or which judge it was is not known). ``profile_for`` gives the
    judge-alignment profile entry the judge was run with, folded into the prompt version."""
    raw = run.path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    when = time.time() if created is None else created
    cards: list[JudgeCard] = []
    skipped: list[str] = []
    for name, found in report.by_criterion.items():
        model = models.get(name)
        configured = run.config.criteria.get(name)
        if model is None or configured is None:
            skipped.append(f"{name}: no card recorded: which judge scored it is not known")
            continue
        if found.judged == 0:
            skipped.append(f"{name}: no card recorded: the judge gave no label")
            continue
        criterion = effective_criterion(configured, num_samples)
        options = getattr(criterion, "judge_model_options", None)
        cards.append(
            JudgeCard(
                judge_model=model,
                judge=report.judges.get(name, model),
                criterion=name,
                prompt_version=prompt_version(
                    name, criterion, profile_for(name, model) if profile_for else None
                ),
                labels_file=str(run.path.resolve()),
                labels_sha256=digest,
                labels=found.pairs,
                judged=found.judged,
                agree=found.agree,
                agreement=found.rate,
                kappa=found.kappa,
                kappa_interval=found.kappa_interval,
                person_positive_rate=found.person_positive_rate,
                judge_positive_rate=found.judge_positive_rate,
                confusion=found.confusion,
                num_samples=options.num_samples if options is not None else None,
                assay_version=__version__,
                created=when,
            )
        )
    return cards, skipped


# -- agreement beside `assay eval`'s verdicts --------------------------------------------------


def attach_agreement(
    results: Sequence[EvalSetResult],
    configs: Sequence[EvalConfig],
    history: Path,
    profile_for: ProfileFor | None = None,
    bundled: Sequence[JudgeCard] | None = None,
) -> None:
    """Give every judged metric of ``results`` (each scored with the config beside it) its
    prompt version (with the profile entry ``profile_for`` gives, if any) and the figures of the
    card :func:`choose_card` picks among the history's at ``history`` and the ``bundled`` ones
    (default: :func:`bundled_cards`) of the same judge model, criterion and prompt version.
    Where none matches but a bundled card of that judge and criterion exists for another prompt
    version, that version is noted (``other_prompt_version``). A history that is not there is
    not made; one that cannot be read raises :class:`~assay.history.records.HistoryError` once
    the bundled cards are attached."""
    wanted = []
    for result, config in zip(results, configs, strict=False):
        if result.assay is None:
            continue
        for metric, info in result.assay.judges.items():
            criterion = config.criteria.get(metric)
            model = info.judge_model or info.model
            if metric == SIMULATOR or model is None or criterion is None:
                continue
            profile = profile_for(metric, model) if profile_for is not None else None
            info.prompt_version = prompt_version(metric, criterion, profile)
            wanted.append((info, (model, metric, info.prompt_version)))
    if not wanted:
        return
    shipped = bundled_cards() if bundled is None else list(bundled)
    failed: HistoryError | None = None
    kept: list[JudgeCard] = []
    if history.is_file():
        try:
            with HistoryStore(history) as store:
                kept = list_cards(store)
        except HistoryError as exc:
            failed = exc
    for info, key in wanted:
        mine = next((card for card in shipped if card.key == key), None)
        card = choose_card([card for card in kept if card.key == key], mine)
        if card is not None:
            info.agreement = card.agreement_info(bundled=card is mine)
            continue
        other = next((c for c in shipped if c.key[:2] == key[:2]), None)
        info.other_prompt_version = other.prompt_version if other is not None else None
    if failed is not None:
        raise failed
