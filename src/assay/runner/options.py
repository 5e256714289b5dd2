"""A run's settings, in one object: :class:`RunOptions`.

The CLI builds one from its options (``assay eval --concurrency ...``), :func:`~assay.runner.
evaluate.evaluate` and :func:`~assay.testing.evaluate_agent` from their keyword arguments, and the
pytest plugin from its command-line options; the runner reads the run's settings from it alone,
so no list of options is written twice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from assay.history.records import default_history_path
from assay.llm.profile import JudgeProfile, resolve_profile
from assay.report.progress import ProgressCallback
from assay.runner.agent_run import AgentSettings
from assay.runner.inference import InferenceSettings
from assay.runner.judges import JudgeSettings as JudgeSettings

if TYPE_CHECKING:
    from assay.agents.base import AgentFactory
    from assay.llm.batch import Progress
    from assay.runner.executors.base import Executor


HistoryOption = bool | str | os.PathLike[str]
"""Whether a run is recorded in the run history: False (not), True (in the default history:
``$ASSAY_HISTORY``, else ``history.sqlite`` beside the cache) or the history file's path."""


BATCH_CASES = 1000
"""With ``--judge-batch``, the fewest cases scored at once (their judge calls share batches)."""


@dataclass(frozen=True)
class RunOptions:
    """Every setting of one run, the same through the CLI, the Python API and pytest.

    Scoring: ``concurrency`` cases scored at once. The judge: ``judge_model`` overrides every
    criterion's, ``judge_concurrency`` calls in flight per endpoint (adapted below it to the
    server's answers unless ``judge_concurrency_fixed``), ``judge_timeout_s`` and
    ``judge_attempts`` bound one call, ``cache`` keeps responses, ``judge_profile`` is a judge
    profile file (``"none"`` for none, None for the bundled one), ``env`` what the judges and
    agent read (default ``os.environ``). The agent: ``num_runs`` runs per case,
    ``inference_concurrency`` cases at once, ``turn_timeout_s`` per turn, ``agent_attempts``
    per conversation, ``mock_tools`` answers tool calls from the recorded responses. The run:
    ``progress`` (see :func:`~assay.runner.evaluate.evaluate`), ``history`` records it
    (:data:`HistoryOption`), ``resume`` continues a recorded run (its id, or ``latest``), and
    ``executor`` is where the cases run (None: in this process).
    """

    concurrency: int = 8
    judge_model: str | None = None
    judge_concurrency: int = 8
    judge_concurrency_fixed: bool = False
    judge_timeout_s: float | None = None
    judge_attempts: int = 4
    cache: bool = True
    judge_profile: str | None = None
    env: Mapping[str, str] | None = None
    num_runs: int = 1
    inference_concurrency: int = 4
    turn_timeout_s: float = 300.0
    agent_attempts: int = 2
    mock_tools: bool = False
    progress: ProgressCallback | bool = True
    history: HistoryOption = False
    resume: str | None = None
    executor: Executor | None = None
    judge_batch: bool = False
    judge_batch_progress: Progress | None = None
    """With ``judge_batch``, told the judges' batches as they change (the CLI's progress)."""
    early_stop_votes: bool = False
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        self.inference()  # a bad value is a ValueError now, before any file is read
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ValueError(f"max_cost_usd must not be negative, got {self.max_cost_usd}")
        if self.resume is not None and self.history is False:
            raise ValueError("resume needs the run history: give history=True (or its file)")

    def inference(self) -> InferenceSettings:
        """How the agent is run."""
        return InferenceSettings(
            num_runs=self.num_runs,
            concurrency=self.inference_concurrency,
            turn_timeout_s=self.turn_timeout_s,
            mock_tools=self.mock_tools,
            attempts=self.agent_attempts,
        )

    def agent(
        self, factory: AgentFactory, spec: str | None = None, name: str | None = None
    ) -> AgentSettings:
        """The agent ``factory`` makes (``spec`` the string it was resolved from, if any;
        ``name`` what the run history calls it), run as these options say."""
        return AgentSettings(make_agent=factory, inference=self.inference(), spec=spec, name=name)

    @cached_property
    def profile(self) -> JudgeProfile | None:
        """The judge profile :attr:`judge_profile` names (read once)."""
        return resolve_profile(self.judge_profile)

    def judges(self) -> JudgeSettings:
        """How the judges are chosen and called."""
        return JudgeSettings(
            model=self.judge_model or None,
            concurrency=self.judge_concurrency,
            adaptive=not self.judge_concurrency_fixed,
            timeout_s=self.judge_timeout_s,
            max_attempts=self.judge_attempts,
            cache=self.cache,
            env=self.env,
            profile=self.profile,
            early_stop=self.early_stop_votes,
            max_cost_usd=self.max_cost_usd,
            batch=self.judge_batch,
            batch_history=(self.history_file or default_history_path(self.env))
            if self.judge_batch and self.history
            else None,
            batch_progress=self.judge_batch_progress,
        )

    @property
    def cases_at_once(self) -> int:
        """Cases scored at once: :attr:`concurrency`, and with :attr:`judge_batch` at least
        :data:`BATCH_CASES`: a case waits a batch round for each judge step, and only the cases
        scored at once share a round (at 8, a 10,000-case run would wait 1,250 rounds)."""
        return max(self.concurrency, BATCH_CASES) if self.judge_batch else self.concurrency

    @property
    def history_file(self) -> Path | None:
        """The history file asked for (None: the default one, or none when not recording)."""
        if isinstance(self.history, bool):
            return None
        return Path(self.history)
