"""The ``/`` commands of ``bastion chat``: model, tools, compact, usage, save, resume."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from bastion import context
from bastion.core import BastionError, message_adapter, new_id
from bastion.sessions import Session

from ._chat_view import describe_tool

if TYPE_CHECKING:
    from collections.abc import Callable

    from bastion.core import Message

    from ._chat import Chat

__all__ = ["Commands"]

_NOW = 1  # /compact's window for an agent without context settings: compact whatever fits
_EXPORT = "bastion-session/1"  # the header of Session.export_jsonl

_HELP = """\
/model [PROVIDER:MODEL]  show the model, or go on with another one
/tools                   the agent's tools
/compact                 compact the conversation; it goes on in a new session
/usage                   tokens and model calls so far
/save [FILE]             write the session as JSON lines (default: SESSION_ID.jsonl)
/resume ID|FILE          go on with a stored session, or one saved to FILE
/reasoning               show the last folded reasoning
/exit                    quit (Ctrl-D too)"""


class Commands:
    """Runs one ``/`` line against a :class:`Chat`."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self._table: dict[str, Callable[[list[str]], None]] = {
            "/help": lambda _: self._say(_HELP),
            "/model": self._model,
            "/tools": self._tools,
            "/compact": self._compact,
            "/usage": self._usage,
            "/save": self._save,
            "/resume": self._resume,
            "/reasoning": self._reasoning,
        }

    def run(self, line: str) -> bool:
        """Run the command on ``line``; False when the chat should end."""
        try:
            name, *args = shlex.split(line)
        except ValueError as exc:
            self._say(f"error: {exc}", "bold red")
            return True
        if name in {"/exit", "/quit"}:
            return False
        command = self._table.get(name)
        if command is None:
            self._say(f"unknown command {name}: /help lists them", "bold red")
            return True
        try:
            command(args)
        except (BastionError, OSError, ValueError) as exc:
            self._say(f"error: {exc}", "bold red")
        return True

    def _say(self, text: str, style: str = "") -> None:
        self.chat.view.note(text, style)

    def _model(self, args: list[str]) -> None:
        chat = self.chat
        if not args:
            self._say(f"model: {chat.agent.config.model.key}")
            return
        agent = chat.agent.with_model(args[0])
        session = chat.session
        if session.messages:
            reopened = chat.call(Session.resume(agent, session.id))
        else:
            reopened = Session(agent, session.id)
        chat.agent = agent
        chat.switch(reopened)
        self._say(f"model: {agent.config.model.key} (session {reopened.id} goes on)")

    def _tools(self, _: list[str]) -> None:
        tools = self.chat.agent.config.tools.by_name
        if not tools:
            self._say("no tools")
        for name, tool in tools.items():
            self._say(describe_tool(name, tool), "")

    def _usage(self, _: list[str]) -> None:
        view = self.chat.view
        usage = view.usage
        self._say(
            f"{view.requests} model calls: {usage.prompt_tokens} input tokens, "
            f"{usage.completion_tokens} output tokens ({usage.total_tokens} in all)"
        )

    def _save(self, args: list[str]) -> None:
        chat = self.chat
        text = chat.call(chat.session.export_jsonl())
        path = Path(args[0] if args else f"{chat.session.id}.jsonl")
        path.write_text(text, encoding="utf-8")
        count = len(chat.session.messages)
        self._say(f"saved session {chat.session.id} ({count} messages) to {path}")

    def _resume(self, args: list[str]) -> None:
        if len(args) != 1:
            self._say("usage: /resume SESSION_ID or /resume FILE.jsonl", "bold red")
            return
        chat, target = self.chat, args[0]
        path = Path(target)
        if path.suffix == ".jsonl" and path.is_file():
            header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
            stored = str(header.get("session_id", ""))
            session = self._open(stored) or self._import(path)
        else:
            session = self._open(target)
            if session is None:
                self._say(f"no session {target!r} in {chat.stores.url}", "bold red")
                return
        chat.switch(session)
        self._say(f"resumed session {session.id} ({len(session.messages)} messages)")

    def _open(self, session_id: str) -> Session | None:
        chat = self.chat

        async def stored() -> bool:
            store = chat.stores.sessions
            return bool(await store.entries(session_id))

        if not session_id or not chat.call(stored()):
            return None
        return chat.call(Session.resume(chat.agent, session_id))

    def _import(self, path: Path) -> Session:
        chat = self.chat
        return chat.call(Session.import_jsonl(chat.agent, path.read_text(encoding="utf-8")))

    def _compact(self, _: list[str]) -> None:
        chat = self.chat
        messages = chat.session.messages
        if not messages:
            self._say("nothing to compact yet")
            return
        if chat.agent.config.context is None:  # no settings: summarize all but the last 2 exchanges
            config = context.ContextConfig(
                strategy="summarize", keep_last=2, max_context_tokens=_NOW
            )
            done = chat.call(chat.agent.compact(messages, config=config))
        else:
            done = chat.call(chat.agent.compact(messages))
        if not done.changed:
            self._say("nothing to compact: the conversation is short")
            return
        session = chat.call(_seeded(chat, done.messages))
        chat.switch(session)
        self._say(
            f"compacted {done.tokens_before} → {done.tokens_after} tokens; "
            f"the chat goes on in session {session.id}"
        )

    def _reasoning(self, _: list[str]) -> None:
        self._say(self.chat.view.reasoning or "no reasoning yet", "italic")


async def _seeded(chat: Chat, messages: list[Message]) -> Session:
    """A new session whose history is ``messages`` (the compacted conversation)."""
    session_id = new_id("session")
    adapter = message_adapter()
    lines = [json.dumps({"format": _EXPORT, "session_id": session_id, "state": {}})]
    parent: str | None = None
    for message in messages:
        entry = new_id("entry")
        payload = {"message": adapter.dump_python(message, mode="json")}
        lines.append(
            json.dumps(
                {"entry_id": entry, "parent_id": parent, "kind": "message", "payload": payload}
            )
        )
        parent = entry
    return await Session.import_jsonl(chat.agent, "\n".join(lines))
