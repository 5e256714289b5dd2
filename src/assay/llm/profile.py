"""A judge profile: what ``assay judge align`` learned about one judge and a team's labels, and
how a judge's answer is decided with it.

A profile (JSON) holds, per criterion, the decision rule fitted for that judge model::

    {
      "format": "assay-judge-profile/1",
      "judge_model": "local:qwen2.5-coder-1.5b",
      "criteria": {
        "safety_v1": {"decision": "probability", "field": "verdict",
                      "positive": ["safe"], "threshold": 0.21, "exemplars": [...], "fit": {...}}
      }
    }

* ``decision: probability``: each closed choice of the judge's answer whose key is ``field``
  (``verdict``, ``is_the_agent_response_valid``, ``label``, ``is_valid``) is decided anew from
  the judge's probabilities (:attr:`~assay.llm.base.LlmResponse.choices`): one of ``positive``
  when their probability together reaches ``threshold``, else the likeliest other option
  (:meth:`CriterionProfile.align`). The metric reads and counts the decided answer as it reads
  any answer; the judge's own answer is kept beside it, with each choice decided otherwise and
  the rule in plain words, so every report shows both. An answer without probabilities (a
  backend that gives none, a cached answer from before) is left as the judge wrote it.
* ``decision: votes``: the backend gives no probabilities, so the metric's samples vote with
  ``threshold`` as the share of positive votes that makes the verdict positive
  (:meth:`CriterionProfile.positive_by_votes`).
* ``exemplars`` are judged examples from the labels, shown to the judge after its instructions
  (:meth:`CriterionProfile.system`).

With no profile every criterion scores exactly as ADK's semantics say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay._internal.files import load_data
from assay.errors import ProfileError, problems_from_validation
from assay.llm.base import Choice, LlmResponse
from assay.llm.choices import rewrite
from assay.llm.models import DEFAULT_MODEL

FORMAT: Literal["assay-judge-profile/1"] = "assay-judge-profile/1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Exemplar(_Strict):
    """A judged example shown to the judge: what it reads and the verdict people gave."""

    input: str
    verdict: str
    case: str | None = None
    """The labelled case it came from (an aligned judge is never shown the case it judges)."""


class CriterionProfile(_Strict):
    """The decision rule fitted for one criterion."""

    decision: Literal["probability", "votes"]
    field: str
    positive: list[str] = Field(min_length=1)
    threshold: float = Field(ge=0.0, le=1.0)
    exemplars: list[Exemplar] = Field(default_factory=list)
    prompt: str = "default"
    """Which of the metric's prompts the judge is asked with: ``default``, or one the metric
    offers for small models (the rubric metrics: ``one_rubric_per_call``)."""
    fit: dict[str, Any] = Field(default_factory=dict)
    """How it was fitted and what it measured (labels, folds, agreement before and after)."""

    def system(self, instructions: str, *, exclude_case: str | None = None) -> str:
        """The judge's instructions followed by the exemplars (any from ``exclude_case`` left
        out)."""
        shown = [e for e in self.exemplars if exclude_case is None or e.case != exclude_case]
        if not shown:
            return instructions
        parts = [instructions, "", "Examples judged by people, with their verdicts:"]
        for index, exemplar in enumerate(shown, 1):
            parts.append(f"<example_{index}>\n{exemplar.input}\n</example_{index}>")
            parts.append(f"verdict of example {index}: {exemplar.verdict}")
        return "\n".join(parts)

    def decide(self, response: LlmResponse) -> LlmResponse:
        """``response`` as the rule decides it (:meth:`align`)."""
        return self.align(response).response

    def align(self, response: LlmResponse) -> Decided:
        """``response`` with each of its choices of ``field`` decided by the threshold (a
        probability decision), and the judge's own choices the rule decided otherwise; as it
        is, with none, otherwise or when it carries no probabilities."""
        if self.decision != "probability" or not response.choices:
            return Decided(response)
        text = response.text
        choices = list(response.choices)
        changed: list[tuple[Choice, str]] = []
        # Last first, so earlier offsets stay right when a literal changes length.
        for index in sorted(range(len(choices)), key=lambda i: -choices[i].start):
            choice = choices[index]
            if choice.path.rsplit(".", 1)[-1] != self.field:
                continue
            wanted = self.decided(choice.probabilities)
            if wanted is None or wanted == choice.chosen:
                continue
            edited = rewrite(text, choice, wanted)
            if edited == text:
                continue
            changed.append((response.choices[index], wanted))
            shift = len(edited) - len(text)
            text = edited
            choices[index] = choice.model_copy(update={"chosen": wanted})
            choices = [
                c.model_copy(update={"start": c.start + shift}) if c.start > choice.start else c
                for c in choices
            ]
        if not changed:
            return Decided(response)
        decided = response.model_copy(update={"text": text, "choices": tuple(choices)})
        return Decided(decided, tuple(sorted(changed, key=lambda item: item[0].start)))

    def rule_words(self, source: str | None) -> str:
        """Why a verdict was decided otherwise, in words: ``the embedded judge's calibration
        asks P(yes) >= 0.96 on this criterion`` (a profile file by its name: the run's judge
        line gives its path)."""
        short = source if not source or source == bundled_source() else Path(source).name
        return f"{source_words(short)} asks {self.describe()} on this criterion"

    def explain(self, source: str | None) -> str:
        """What the rule changes, in words a newcomer reads: ``verdicts re-decided by the
        embedded judge's calibration (fitted to people's labels): "valid" needs the judge's
        P(valid) >= 0.84; each verdict shows the judge's own answer too``."""
        positive = " or ".join(f'"{p}"' for p in self.positive)
        if self.decision == "votes":
            needs = f"{positive} needs {self.threshold:.0%} of the judge's samples to say so"
        else:
            named = " or ".join(self.positive)
            needs = f"{positive} needs the judge's P({named}) >= {self.threshold:.2f}"
        asked = "" if self.prompt == "default" else f", asked {self.prompt.replace('_', ' ')}"
        return (
            f"verdicts re-decided by {source_words(source)} (fitted to people's labels): "
            f"{needs}{asked}; each verdict shows the judge's own answer too"
        )

    def describe(self) -> str:
        """The rule in words: ``P(safe) >= 0.42`` or ``votes for safe >= 60%``."""
        positive = " or ".join(self.positive)
        asked = "" if self.prompt == "default" else f", asked {self.prompt.replace('_', ' ')}"
        if self.decision == "votes":
            return f"votes for {positive} >= {self.threshold:.0%}{asked}"
        return f"P({positive}) >= {self.threshold:.2f}{asked}"

    def decided(self, probabilities: dict[str, float]) -> str | None:
        """The option the threshold picks from ``probabilities`` (None when the options are not
        this criterion's)."""
        positive = [o for o in probabilities if o in self.positive]
        negative = [o for o in probabilities if o not in self.positive]
        if not positive or not negative:
            return None
        mass = sum(probabilities[o] for o in positive)
        side = positive if mass >= self.threshold else negative
        return max(side, key=lambda o: probabilities[o])

    def positive_by_votes(self, positive: int, counted: int) -> bool | None:
        """A votes decision: whether ``positive`` of ``counted`` samples make the verdict
        positive (None with no counted sample, or for a probability decision)."""
        if self.decision != "votes" or counted == 0:
            return None
        return positive / counted >= self.threshold


@dataclass(frozen=True)
class Decided:
    """An answer as a profile decided it: ``response`` (its text rewritten where the rule decided
    otherwise, as the metric reads it) and ``changed``, each of the judge's own choices the rule
    decided otherwise with the option it picked, in the order of the text (empty: the judge's
    answer stands)."""

    response: LlmResponse
    changed: tuple[tuple[Choice, str], ...] = ()


class JudgeProfile(_Strict):
    """A profile file (see the module docs)."""

    format: Literal["assay-judge-profile/1"] = FORMAT
    judge_model: str
    created: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    """The labels file it was fitted on: ``path`` and ``sha256``."""
    criteria: dict[str, CriterionProfile]
    source: str | None = Field(default=None, exclude=True)
    """Where it was read from, for messages (a path, or the bundled alignment); not written."""

    def for_criterion(self, name: str) -> CriterionProfile | None:
        """The rule for criterion ``name``, if the profile has one."""
        return self.criteria.get(name)

    def entry_for(self, criterion: str, model: str) -> dict[str, Any] | None:
        """The rule for ``criterion`` as JSON where it applies: when ``model`` (as
        ``--judge-model`` takes it) is the judge it was fitted for. What a judge card's prompt
        version folds in: what decides the verdicts, not ``fit`` (how it was fitted and what it
        measured, which a re-measurement changes without changing a verdict)."""
        found = self.criteria.get(criterion) if model == self.judge_model else None
        return None if found is None else found.model_dump(mode="json", exclude={"fit"})


def load_profile(path: str | Path) -> JudgeProfile:
    """Read a profile file; a missing, unreadable or malformed one is an
    :class:`~assay.errors.ProfileError` naming the file and the JSON path (exit 2)."""
    where = Path(path)
    data = load_data(where, ProfileError)
    try:
        profile = JudgeProfile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(problems_from_validation(exc, where, data)) from None
    return profile.model_copy(update={"source": str(where)})


BUNDLED = Path(__file__).resolve().parent / "profiles"
"""Alignments shipped with assay, one per built-in local model: ``<model name>.json``."""
NO_PROFILE = "none"
"""What ``--judge-profile`` takes to score with no profile at all, not even a bundled one."""


def bundled_profile(folder: Path = BUNDLED) -> JudgeProfile | None:
    """The shipped alignment of the default embedded judge, or None when there is none. It
    applies only where that model is the judge (a profile names the model it was fitted for)."""
    path = folder / f"{DEFAULT_MODEL.name}.json"
    if not path.is_file():
        return None
    profile = load_profile(path)
    return profile.model_copy(update={"source": bundled_source()})


def bundled_source() -> str:
    """How a bundled alignment is named in messages and reports."""
    return "the embedded judge's calibration"


def source_words(source: str | None) -> str:
    """A profile named in a sentence: the bundled one as :func:`bundled_source` says, a file as
    ``the judge profile <path>``."""
    if not source:
        return "the judge profile"
    return source if source == bundled_source() else f"the judge profile {source}"


def resolve_profile(option: str | None) -> JudgeProfile | None:
    """The profile a ``--judge-profile`` value names: a file, ``none`` for no profile, or, left
    out, the bundled alignment of the embedded judge."""
    if option is None:
        return bundled_profile()
    if option.strip().lower() == NO_PROFILE:
        return None
    return load_profile(option)


def save_profile(profile: JudgeProfile, path: str | Path) -> None:
    """Write ``profile`` as JSON."""
    Path(path).write_text(profile.model_dump_json(indent=2) + "\n", encoding="utf-8")
