"""Pricing token usage: the user's table over the bundled one, then LiteLLM's offline map;
batch prices for the batched part; local models free; an unknown model's cost unknown."""

from __future__ import annotations

import pytest

from assay.config import EvalConfig
from assay.config.eval_config import ModelPrice
from assay.llm.base import TokenUsage
from assay.llm.prices import PriceBook, bundled_prices, cost_usd, format_usd, model_names

USAGE = TokenUsage(prompt_tokens=2_000_000, completion_tokens=1_000_000, calls=10)


def test_a_model_string_is_looked_up_as_written_then_by_its_name() -> None:
    assert model_names("openai:gpt-4o-mini") == ["openai:gpt-4o-mini", "gpt-4o-mini"]
    assert model_names("litellm:openai/gpt-4o") == [
        "litellm:openai/gpt-4o",
        "openai/gpt-4o",
        "gpt-4o",
    ]


def test_the_bundled_table_prices_a_known_model() -> None:
    book = PriceBook(use_litellm=False)
    price = bundled_prices()["gpt-4o-mini"]
    expected = 2 * price.input + 1 * price.output
    assert book.cost("openai:gpt-4o-mini", USAGE) == pytest.approx(expected)
    found = book.find("openai:gpt-4o-mini")
    assert found is not None and found.source == "bundled"


def test_the_users_table_overrides_the_bundled_one() -> None:
    config = EvalConfig.model_validate(
        {"criteria": {}, "prices": {"gpt-4o-mini": {"input": 1.0, "output": 3.0}}}
    )
    book = PriceBook(config.prices, use_litellm=False)
    assert book.cost("openai:gpt-4o-mini", USAGE) == pytest.approx(5.0)
    found = book.find("gpt-4o-mini")
    assert found is not None and found.source == "config"


def test_a_config_price_cannot_be_negative() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        EvalConfig.model_validate({"prices": {"m": {"input": -1, "output": 1}}})


def test_batched_tokens_cost_half_unless_a_batch_price_is_given() -> None:
    price = ModelPrice(input=1.0, output=4.0)
    assert cost_usd(price, USAGE, batched=USAGE) == pytest.approx((2 + 4) / 2)
    own = ModelPrice(input=1.0, output=4.0, batch_input=0.25, batch_output=1.0)
    half_batched = TokenUsage(prompt_tokens=1_000_000, completion_tokens=0)
    assert cost_usd(own, USAGE, batched=half_batched) == pytest.approx(1 + 0.25 + 4)


def test_local_models_are_free_and_unknown_ones_have_no_cost() -> None:
    book = PriceBook(use_litellm=False)
    assert book.cost("local:", USAGE) == 0.0
    assert book.cost("ollama:llama3", USAGE) == 0.0
    assert book.cost("openai:no-such-model-anywhere", USAGE) is None


def test_litellms_offline_map_prices_a_model_the_tables_lack() -> None:
    found = PriceBook().find("openai:gpt-3.5-turbo")
    assert found is not None and found.source == "litellm"
    assert found.price.input > 0 and found.price.output > 0


def test_amounts_are_written_for_people() -> None:
    assert format_usd(0.0) == "$0"
    assert format_usd(0.0042) == "$0.0042"
    assert format_usd(1234.5) == "$1,234.50"
