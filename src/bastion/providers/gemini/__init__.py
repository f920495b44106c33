"""The Gemini API adapter (``streamGenerateContent`` over SSE): ``"gemini:<model>"``."""

from ._protocol import GeminiProtocol, gemini_model

__all__ = ["GeminiProtocol", "gemini_model"]
