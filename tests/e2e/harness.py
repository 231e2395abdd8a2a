"""The e2e server handle: REST calls as a non-browser client, and the daily line from its DB."""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from websockets.sync.client import connect

from tests.e2e.flows import PASSWORD

_names = itertools.count(1)


def unique_name(prefix: str) -> str:
    return f"{prefix}{next(_names)}{uuid.uuid4().hex[:5]}"


class HttpError(Exception):
    def __init__(self, status: int, body: dict) -> None:
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body


@dataclass
class Server:
    base_url: str
    sqlite_path: Path
    log_path: Path
    ready: threading.Event = field(default_factory=threading.Event)
    failure: str | None = None

    def wait_ready(self) -> None:
        """Block until the server is up (it starts in the background); fail if it cannot."""
        if not self.ready.wait(timeout=90):
            pytest.fail("the e2e server did not start within 90 s")
        if self.failure:
            pytest.fail(self.failure)

    def request(
        self,
        method: str,
        path: str,
        body: dict | None = None,
        token: str | None = None,
        wait: bool = True,
    ) -> dict | list | None:
        """One REST call as a non-browser client (Token auth), JSON in and out."""
        if wait:
            self.wait_ready()
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Token {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                payload = json.loads(raw or b"{}")
            except ValueError:
                payload = {"raw": raw[:200].decode(errors="replace")}
            raise HttpError(exc.code, payload) from None
        return json.loads(raw) if raw else None

    def register(self, username: str | None = None) -> tuple[str, str]:
        """A new account through the public API: (username, token)."""
        username = username or unique_name("bot")
        body = self.request(
            "POST", "/api/auth/register", {"username": username, "password": PASSWORD}
        )
        return username, body["token"]

    def play(self, gid: int, token: str, actions: list[str]) -> dict:
        """Play `actions` (move strings, or "undo") on game `gid` over one WebSocket, as a
        client on another device would, each once the one before is answered; returns the
        last state. Hundreds of actions take a second here, where a REST request each took
        several (a new connection and a request's handling per action)."""
        self.wait_ready()
        url = "ws" + self.base_url.removeprefix("http") + f"/ws/games/{gid}"
        with connect(url, additional_headers={"Authorization": f"Token {token}"}) as sock:
            frame = json.loads(sock.recv(timeout=10))
            for i, action in enumerate(actions):
                d = {"v": frame["v"], "id": i} | ({} if action == "undo" else {"move": action})
                sock.send(json.dumps({"t": "undo" if action == "undo" else "move", "d": d}))
                answer = json.loads(sock.recv(timeout=10))
                assert answer == {"t": "ack", "d": {"id": i}}, (action, answer)
                frame = json.loads(sock.recv(timeout=10))
                assert frame["t"] == "state", frame
        return frame["d"]

    def daily_line(self, date: str, variant: str) -> list[str]:
        """The certified winning line of a daily challenge, read from the server's database."""
        with sqlite3.connect(self.sqlite_path) as db:
            row = db.execute(
                "SELECT line FROM games_dailychallenge WHERE date = ? AND variant = ?",
                (date, variant),
            ).fetchone()
        assert row is not None, f"no {variant} challenge stored for {date}"
        return json.loads(row[0])
