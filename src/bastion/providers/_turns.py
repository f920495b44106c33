"""What the adapters whose protocol needs a user turn first put there when there is none.

A history cut by compaction, a crash or an edit can start with the model's turn; Anthropic
and Gemini reject that, so their adapters open the conversation with this short note.
"""

from __future__ import annotations

__all__ = ["EARLIER_NOT_SHOWN"]

EARLIER_NOT_SHOWN = "(The earlier part of this conversation is not shown.)"
