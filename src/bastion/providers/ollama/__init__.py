"""Ollama's native chat API (``POST /api/chat``, NDJSON stream), for local and hosted Ollama.

``resolve_model("ollama:qwen2.5:7b-instruct")`` calls :func:`ollama_model`; everything after
the first colon is the Ollama model name, tags included.
"""

from ._protocol import OllamaChatProtocol, ollama_base_url, ollama_model

__all__ = ["OllamaChatProtocol", "ollama_base_url", "ollama_model"]
