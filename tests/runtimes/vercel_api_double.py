"""A stand-in for the Vercel Sandbox API on a real local socket, answering as the reference says.

Each endpoint checks the request the way Vercel documents it (method, path, ``teamId``
query, bearer token, JSON fields, the gzipped tar of ``fs/write`` with its ``x-cwd``
header) and answers with the documented shapes: ``{"sandbox": {...}, "routes": []}``,
``{"command": {...}}``, NDJSON log lines ``{"stream", "data"}`` and
``{"error": {"code", "message"}}``. The "VM" is a directory: its work dir
``/vercel/sandbox`` maps to ``root``, and commands run there as local processes.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import tarfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "vcl_tok_9f8e7d6c5b4a"
TEAM = "team_abc"
VM_CWD = "/vercel/sandbox"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class VercelDouble:
    root: Path
    requests: list[Recorded] = field(default_factory=list[Recorded])
    failures: list[tuple[int, dict[str, Any], dict[str, str]]] = field(
        default_factory=list[tuple[int, dict[str, Any], dict[str, str]]]
    )
    processes: dict[str, subprocess.Popen[bytes]] = field(
        default_factory=dict[str, "subprocess.Popen[bytes]"]
    )
    killed: list[str] = field(default_factory=list[str])
    created: int = 0
    stopped: int = 0
    base_url: str = ""

    def host(self, vm_path: str) -> Path:
        if vm_path == VM_CWD or vm_path.startswith(VM_CWD + "/"):
            return self.root / vm_path[len(VM_CWD) :].lstrip("/")
        return Path(vm_path)  # /tmp and the like: the host's own

    def sandbox(self, status: str = "running") -> dict[str, Any]:
        return {
            "id": "sbx_001",
            "memory": 4096,
            "vcpus": 2,
            "region": "iad1",
            "runtime": "python3.13",
            "timeout": 300000,
            "status": status,
            "requestedAt": 1764115200000,
            "createdAt": 1764115200000,
            "updatedAt": 1764115201000,
            "cwd": VM_CWD,
        }


def command_json(cmd_id: str, argv: list[str], cwd: str, exit_code: int | None) -> dict[str, Any]:
    return {
        "id": cmd_id,
        "name": argv[0],
        "args": argv[1:],
        "cwd": cwd,
        "sandboxId": "sbx_001",
        "exitCode": exit_code,
        "startedAt": 1764115202000,
    }


def serve(double: VercelDouble) -> ThreadingHTTPServer:
    """Start the double on a free port (a daemon thread); ``server.shutdown()`` stops it."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def _handle(self, method: str) -> None:
            url = urlsplit(self.path)
            size = int(self.headers.get("content-length") or 0)
            record = Recorded(
                method=method,
                path=url.path,
                query=parse_qs(url.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=self.rfile.read(size),
            )
            double.requests.append(record)
            if record.headers.get("authorization") != f"Bearer {TOKEN}":
                self._json(401, {"error": {"code": "forbidden", "message": "Not authorized"}})
                return
            if record.query.get("teamId") != [TEAM]:
                self._json(400, {"error": {"code": "bad_request", "message": "teamId missing"}})
                return
            if double.failures:
                status, body, headers = double.failures.pop(0)
                self._json(status, body, headers)
                return
            self._route(record)

        def _route(self, r: Recorded) -> None:
            routes = [
                ("POST", r"/v1/sandboxes", self._create),
                ("POST", r"/v1/sandboxes/sbx_001/cmd", self._run),
                ("GET", r"/v1/sandboxes/sbx_001/cmd/(cmd_\d+)/logs", self._logs),
                ("GET", r"/v1/sandboxes/sbx_001/cmd/(cmd_\d+)", self._wait),
                ("POST", r"/v1/sandboxes/sbx_001/(cmd_\d+)/kill", self._kill),
                ("POST", r"/v1/sandboxes/sbx_001/fs/read", self._read),
                ("POST", r"/v1/sandboxes/sbx_001/fs/write", self._write),
                ("POST", r"/v1/sandboxes/sbx_001/stop", self._stop),
            ]
            for method, pattern, handler in routes:
                match = re.fullmatch(pattern, r.path)
                if method == r.method and match:
                    handler(r, *match.groups())
                    return
            self._json(404, {"error": {"code": "not_found", "message": f"no route {r.path}"}})

        def _create(self, r: Recorded) -> None:
            body = json.loads(r.body)
            assert body["projectId"] == "prj_123"
            assert isinstance(body["runtime"], str)
            assert isinstance(body["timeout"], int)
            assert body["resources"] == {"vcpus": 2}
            assert body["networkPolicy"]["mode"] in ("allow-all", "deny-all")
            double.created += 1
            self._json(200, {"sandbox": double.sandbox(), "routes": []})

        def _run(self, r: Recorded) -> None:
            body = json.loads(r.body)
            assert set(body) == {"command", "args", "cwd", "env", "sudo"}
            argv = [body["command"], *body["args"]]
            cmd_id = f"cmd_{len(double.processes) + 1}"
            double.processes[cmd_id] = subprocess.Popen(
                argv,
                cwd=double.host(body["cwd"]),
                env={"PATH": "/usr/bin:/bin", **body["env"]},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            self._json(200, {"command": command_json(cmd_id, argv, body["cwd"], None)})

        def _logs(self, r: Recorded, cmd_id: str) -> None:
            out, err = double.processes[cmd_id].communicate()
            lines = [
                {"stream": "stdout", "data": out[: len(out) // 2].decode()},
                {"stream": "stderr", "data": err.decode()},
                {"stream": "stdout", "data": out[len(out) // 2 :].decode()},
            ]
            payload = "".join(json.dumps(line) + "\n" for line in lines if line["data"])
            self._send(200, payload.encode(), "application/x-ndjson")

        def _wait(self, r: Recorded, cmd_id: str) -> None:
            assert r.query.get("wait") == ["true"]
            process = double.processes[cmd_id]
            code = process.wait()
            argv = [str(a) for a in process.args]  # type: ignore[union-attr]
            self._json(200, {"command": command_json(cmd_id, argv, VM_CWD, code)})

        def _kill(self, r: Recorded, cmd_id: str) -> None:
            assert json.loads(r.body) == {"signal": 9}
            process = double.processes[cmd_id]
            process.kill()
            double.killed.append(cmd_id)
            argv = [str(a) for a in process.args]  # type: ignore[union-attr]
            self._json(200, {"command": command_json(cmd_id, argv, VM_CWD, None)})

        def _read(self, r: Recorded) -> None:
            body = json.loads(r.body)
            assert body["cwd"] == VM_CWD
            path = double.host(body["path"])
            if not path.is_file():
                self._json(404, {"error": {"code": "file_not_found", "message": "No such file"}})
                return
            self._send(200, path.read_bytes(), "application/octet-stream")

        def _write(self, r: Recorded) -> None:
            assert r.headers["content-type"] == "application/gzip"
            target = double.host(r.headers["x-cwd"])
            with tarfile.open(fileobj=io.BytesIO(gzip.decompress(r.body))) as tar:
                for member in tar.getmembers():
                    dest = target / member.name
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    extracted = tar.extractfile(member)
                    assert extracted is not None
                    dest.write_bytes(extracted.read())
            self._json(200, {})

        def _stop(self, r: Recorded) -> None:
            double.stopped += 1
            self._json(200, {"sandbox": double.sandbox("stopping")})

        def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(body).encode(), "application/json", headers)

        def _send(
            self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    double.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server
