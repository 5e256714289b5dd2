"""The base model every eval-set, config and result type shares: ADK's JSON conventions.

Keys are accepted in snake_case and camelCase; unknown keys are rejected; output is snake_case
(``model_dump`` without ``by_alias``), which is what ADK writes to disk.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class AssayModel(BaseModel):
    """Strict pydantic base: camelCase or snake_case in, snake_case out, no unknown keys."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        loc_by_alias=False,
    )
