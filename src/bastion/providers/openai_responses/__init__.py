"""The OpenAI Responses API adapter (``"openai-responses:<model>"``)."""

from ._protocol import ResponsesProtocol, openai_responses_model

__all__ = ["ResponsesProtocol", "openai_responses_model"]
