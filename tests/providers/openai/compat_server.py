"""A scripted OpenAI-compatible server, run as a real process by ``test_compat_server``.

Stdlib only. Listens on an ephemeral port (printed as the first stdout line), answers
``POST /v1/chat/completions`` the way a llama-server would: a tool call to ``add`` first,
then ``42`` once a tool result is in the conversation; streamed (SSE, no usage) or whole
(JSON, with usage) as the request asks; HTTP 500 with llama-server's message when an
assistant tool-call turn carries ``content: null``. Every request body is printed as one
stdout line, so the test sees exactly what crossed the socket.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "add", "arguments": '{"a": 19, "b": 23}'},
}
_NULL_CONTENT = "Assistant message must contain either 'content' or 'tool_calls'!"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["content-length"])))
        print(json.dumps(body), flush=True)
        if any(m["role"] == "assistant" and m.get("content", "") is None for m in body["messages"]):
            error = {"error": {"code": 500, "message": _NULL_CONTENT, "type": "server_error"}}
            self._send(500, "application/json", json.dumps(error).encode())
            return
        if any(m["role"] == "tool" for m in body["messages"]):
            message: dict[str, Any] = {"role": "assistant", "content": "42"}
            finish = "stop"
        else:
            message = {"role": "assistant", "content": "", "tool_calls": [_CALL]}
            finish = "tool_calls"
        if body.get("stream"):
            delta = {**message}
            if "tool_calls" in delta:
                delta["tool_calls"] = [{"index": 0, **_CALL}]
            chunk = {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            self._send(
                200, "text/event-stream", f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            )
            return
        usage = {"prompt_tokens": 31, "completion_tokens": 7, "total_tokens": 38}
        whole = {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        self._send(200, "application/json", json.dumps(whole).encode())

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: stdout carries the request bodies only."""


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
