"""Built-in personas: ADK 2.13's ids, our own descriptions, and how ids are resolved."""

from __future__ import annotations

import pytest
from google.adk.evaluation.simulation.pre_built_personas import get_default_persona_registry

from assay.evalset.case import UserPersona
from assay.simulation import BUILTIN_PERSONAS, UserSimulatorError, resolve_persona
from assay.simulation.personas import persona_texts

ADK_PERSONAS = {p.id: p for p in get_default_persona_registry().get_registered_personas()}


def test_the_built_in_ids_are_adks() -> None:
    assert list(BUILTIN_PERSONAS) == list(ADK_PERSONAS) == ["EXPERT", "NOVICE", "EVALUATOR"]


@pytest.mark.parametrize("persona_id", list(ADK_PERSONAS))
def test_each_built_in_persona_has_as_many_behaviours_as_adks_in_our_own_words(
    persona_id: str,
) -> None:
    ours, adk = BUILTIN_PERSONAS[persona_id], ADK_PERSONAS[persona_id]
    assert ours.id == persona_id
    assert len(ours.behaviors) == len(adk.behaviors)
    adk_texts = {adk.description}
    for b in adk.behaviors:
        adk_texts |= {b.name, b.description, *b.behavior_instructions, *b.violation_rubrics}
    our_texts = {text for _, text in persona_texts(ours)}
    assert not our_texts & adk_texts
    assert all(b.behavior_instructions and b.violation_rubrics for b in ours.behaviors)


@pytest.mark.parametrize("persona_id", list(BUILTIN_PERSONAS))
def test_each_built_in_persona_says_when_to_write_the_stop_signal(persona_id: str) -> None:
    instructions = [
        text for b in BUILTIN_PERSONAS[persona_id].behaviors for text in b.behavior_instructions
    ]
    assert any("{{ stop_signal }}" in text for text in instructions)


def test_an_id_resolves_to_a_copy_of_the_built_in_persona() -> None:
    resolved = resolve_persona("EXPERT")
    assert resolved == BUILTIN_PERSONAS["EXPERT"]
    assert resolved is not None
    resolved.behaviors.clear()
    assert BUILTIN_PERSONAS["EXPERT"].behaviors


def test_an_object_and_none_are_returned_as_given() -> None:
    persona = UserPersona(id="MINE", description="d")
    assert resolve_persona(persona) is persona
    assert resolve_persona(None) is None


@pytest.mark.parametrize(
    ("given", "hint"),
    [("novice", "did you mean 'NOVICE'? "), ("EXPRET", "did you mean 'EXPERT'? "), ("zzz", "")],
)
def test_an_unknown_id_is_an_error_with_a_hint_and_the_known_ids(given: str, hint: str) -> None:
    with pytest.raises(UserSimulatorError) as caught:
        resolve_persona(given)
    assert str(caught.value) == (
        f"unknown user_persona id {given!r}: {hint}the built-in personas are EXPERT, NOVICE, "
        "EVALUATOR (or give a persona object with id, description and behaviors)"
    )
