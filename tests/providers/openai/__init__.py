"""Tests of the OpenAI Chat Completions adapter."""
