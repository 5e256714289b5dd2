"""What a judge's tokens cost: a price per model, from the user's table, a small bundled one or
LiteLLM's offline price map, and the cost of a :class:`~assay.llm.base.TokenUsage` at that price.

A model string is looked up as written (``openai:gpt-4o-mini``), then by its name alone
(``gpt-4o-mini``; the part after the backend prefix, then after the last ``/``), in this order:

1. the ``prices`` of the run's config (:class:`~assay.config.eval_config.ModelPrice`), so a user
   can add a model or override a price;
2. the bundled table (``prices.json`` beside this module: list prices, US dollars per million
   tokens, with the date they were read);
3. LiteLLM's price map, when the ``litellm`` extra is installed, read offline (this module sets
   ``LITELLM_LOCAL_MODEL_COST_MAP=True`` unless it is set, so importing LiteLLM never fetches
   the map over the network).

Models that run on the user's own machine (``local:``, ``ollama:``, ``scripted:``) cost nothing.
A model found nowhere has no price: its cost is unknown (None), never guessed as zero.

Batch prices: a call answered through a provider's batch API is priced at ``batch_input`` /
``batch_output``, or half the ordinary price where the table gives none (OpenAI's and Gemini's
batch APIs both charge half). :func:`cost_usd` takes the batched part of a usage separately.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from assay.config.eval_config import ModelPrice
from assay.llm.base import TokenUsage

FREE_PREFIXES = ("local:", "ollama:", "scripted:")
"""Model strings served on the user's own machine: priced at zero."""

_FREE = ModelPrice(input=0.0, output=0.0, batch_input=0.0, batch_output=0.0)
_MILLION = 1_000_000


@dataclass(frozen=True)
class FoundPrice:
    """A model's price and where it came from (``config``, ``bundled``, ``litellm``, ``free``)."""

    price: ModelPrice
    source: str


def model_names(model: str) -> list[str]:
    """The names ``model`` is looked up by, most specific first: as written, without its
    backend prefix, and its last ``/`` part (``litellm:openai/gpt-4o`` -> ``gpt-4o``)."""
    written = model.strip()
    names = [written]
    prefix, colon, rest = written.partition(":")
    if colon and prefix and "/" not in prefix:
        names.append(rest)
    names.append(names[-1].rsplit("/", 1)[-1])
    return list(dict.fromkeys(n for n in names if n))


@cache
def bundled_prices() -> dict[str, ModelPrice]:
    """The bundled price table (``prices.json``), read once."""
    text = resources.files("assay.llm").joinpath("prices.json").read_text(encoding="utf-8")
    table: dict[str, Any] = json.loads(text)["prices"]
    return {name: ModelPrice.model_validate(entry) for name, entry in table.items()}


def litellm_price(name: str) -> ModelPrice | None:
    """``name``'s price in LiteLLM's offline map, when the ``litellm`` extra is installed."""
    table = _litellm_table()
    entry = table.get(name) if table is not None else None
    if not isinstance(entry, dict):
        return None
    per_input = entry.get("input_cost_per_token")
    per_output = entry.get("output_cost_per_token")
    if not isinstance(per_input, int | float) or not isinstance(per_output, int | float):
        return None
    batch_in = entry.get("input_cost_per_token_batches")
    batch_out = entry.get("output_cost_per_token_batches")
    return ModelPrice(
        input=per_input * _MILLION,
        output=per_output * _MILLION,
        batch_input=batch_in * _MILLION if isinstance(batch_in, int | float) else None,
        batch_output=batch_out * _MILLION if isinstance(batch_out, int | float) else None,
    )


@cache
def _litellm_table() -> Mapping[str, Any] | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except Exception:  # the extra is not installed (or cannot be imported here)
        return None
    table = getattr(litellm, "model_cost", None)
    return table if isinstance(table, Mapping) else None


class PriceBook:
    """Prices for a run: the user's table (``prices`` in the config) over the bundled one, then
    LiteLLM's offline map (``use_litellm=False`` leaves it out, as tests do)."""

    def __init__(
        self, user: Mapping[str, ModelPrice] | None = None, *, use_litellm: bool = True
    ) -> None:
        self.user = dict(user or {})
        self.use_litellm = use_litellm

    def find(self, model: str) -> FoundPrice | None:
        """``model``'s price and its source; None when no table knows it."""
        if model.strip().startswith(FREE_PREFIXES):
            return FoundPrice(_FREE, "free")
        names = model_names(model)
        for source, table in (("config", self.user), ("bundled", bundled_prices())):
            for name in names:
                if name in table:
                    return FoundPrice(table[name], source)
        if self.use_litellm:
            for name in names:
                found = litellm_price(name)
                if found is not None:
                    return FoundPrice(found, "litellm")
        return None

    def cost(
        self, model: str, usage: TokenUsage, *, batched: TokenUsage | None = None
    ) -> float | None:
        """What ``usage`` of ``model`` cost in US dollars; None when its price is unknown.
        ``batched`` is the part of ``usage`` answered through a batch API."""
        found = self.find(model)
        return None if found is None else cost_usd(found.price, usage, batched=batched)


def cost_usd(price: ModelPrice, usage: TokenUsage, *, batched: TokenUsage | None = None) -> float:
    """The US dollars ``usage`` costs at ``price``; the ``batched`` part of it at the batch
    price (half the ordinary one where ``price`` gives none). Cache hits cost nothing (their
    tokens are not in ``usage``)."""
    batch = batched or TokenUsage()
    plain_in = max(usage.prompt_tokens - batch.prompt_tokens, 0)
    plain_out = max(usage.completion_tokens - batch.completion_tokens, 0)
    batch_in = price.batch_input if price.batch_input is not None else price.input / 2
    batch_out = price.batch_output if price.batch_output is not None else price.output / 2
    dollars = (
        plain_in * price.input
        + plain_out * price.output
        + batch.prompt_tokens * batch_in
        + batch.completion_tokens * batch_out
    )
    return dollars / _MILLION


def format_usd(amount: float) -> str:
    """Dollars for a person: ``$0.0042``, ``$1.23``, ``$1,234.50`` (small amounts keep two
    significant digits, so a cheap run never reads as ``$0.00``)."""
    if amount == 0:
        return "$0"
    if amount < 0.000001:
        return "<$0.000001"
    if amount < 0.01:
        return "$" + f"{amount:.6f}".rstrip("0")
    return f"${amount:,.2f}"


__all__ = [
    "FREE_PREFIXES",
    "FoundPrice",
    "PriceBook",
    "bundled_prices",
    "cost_usd",
    "format_usd",
    "litellm_price",
    "model_names",
]
