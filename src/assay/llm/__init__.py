"""Every LLM call assay makes: one backend protocol, one client (limits, retries, cache, usage)."""

from assay.llm.base import (
    LlmBackend,
    LlmCallError,
    LlmError,
    LlmRequest,
    LlmResponse,
    LlmUnavailableError,
    Message,
    TokenUsage,
    UsageLedger,
)
from assay.llm.judge import Judge

__all__ = [
    "Judge",
    "LlmBackend",
    "LlmCallError",
    "LlmError",
    "LlmRequest",
    "LlmResponse",
    "LlmUnavailableError",
    "Message",
    "TokenUsage",
    "UsageLedger",
]
