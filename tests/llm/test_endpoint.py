"""Which endpoint a backend calls: one server whatever the model names (and through either
OpenAI-compatible backend), a model of its own on the hosted APIs that limit per model, the model
string for other backends, and never a secret of the base URL in the key."""

from __future__ import annotations

from assay.llm.adaptive import AdaptivePolicy
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.backends.scripted import ScriptedBackend
from assay.llm.endpoint import Endpoint, Endpoints, endpoint_key


def _served(model: str, base_url: str, kind: str = "openai") -> str:
    return endpoint_key(OpenAICompatBackend(model, base_url=base_url, kind=kind))


def test_two_models_on_one_server_are_one_endpoint_whatever_the_backend_or_path() -> None:
    first = _served("openai:model-a", "http://127.0.0.1:8000/v1")
    assert first == "http://127.0.0.1:8000"
    assert _served("openai:model-b", "http://127.0.0.1:8000/v1/") == first
    assert _served("ollama:model-c", "http://127.0.0.1:8000/v1", kind="ollama") == first
    assert _served("openai:model-a", "http://127.0.0.1:8001/v1") != first


def test_the_default_port_is_spelled_out_so_one_server_has_one_key() -> None:
    assert _served("openai:m", "https://gateway.example/v1") == "https://gateway.example:443"
    assert _served("openai:m", "https://GATEWAY.example:443/openai") == (
        "https://gateway.example:443"
    )


def test_openais_own_api_is_an_endpoint_per_model() -> None:
    mini = _served("openai:gpt-4o-mini", "https://api.openai.com/v1")
    assert mini == "https://api.openai.com:443 openai:gpt-4o-mini"
    assert _served("openai:gpt-4o", "https://api.openai.com/v1") != mini


def test_credentials_and_queries_in_a_base_url_stay_out_of_the_key() -> None:
    key = _served("openai:m", "http://user:sk-secret-0000@10.0.0.5:8080/v1?key=sk-also-secret")
    assert key == "http://10.0.0.5:8080"


def test_other_backends_are_an_endpoint_per_model() -> None:
    first = ScriptedBackend("fine", model="scripted:one")
    assert endpoint_key(first) == "scripted scripted:one"
    assert endpoint_key(ScriptedBackend("fine", model="scripted:two")) != endpoint_key(first)


def test_endpoints_hand_every_backend_of_one_server_the_same_endpoint() -> None:
    endpoints = Endpoints(adaptive=AdaptivePolicy(hold_rounds=1))
    first = OpenAICompatBackend("openai:a", base_url="http://127.0.0.1:8000/v1")
    second = OpenAICompatBackend("openai:b", base_url="http://127.0.0.1:8000/v1")
    found = endpoints.for_backend(first, 4)
    assert endpoints.for_backend(second, 9) is found  # the first made it: its concurrency
    assert found.slots.capacity == 4
    assert found.adaptive is not None and found.adaptive.policy.hold_rounds == 1
    assert len(endpoints) == 1


def test_a_fixed_endpoint_has_no_adaptive_limit() -> None:
    assert Endpoint("k", 3, adaptive=False).adaptive is None
