"""A client of someone else's, served from another site, in a real browser: it plays through the
REST API and a WebSocket with its token (server.cors, server.ws_subprotocol), and Chromium's own
cross-origin rules decide what it may read."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.e2e.flows import PASSWORD
from tests.e2e.harness import Server, unique_name

pytestmark = pytest.mark.e2e

PAGE = b"<!doctype html><title>Another site's client</title><p>a client of someone else's"

# Run in the page: what a third-party client does, from sign-up to a move over the socket.
PLAY_JS = """async ([api, username, password]) => {
  const json = {"Content-Type": "application/json"};
  const signUp = await fetch(api + "/api/auth/register", {
    method: "POST", headers: json, body: JSON.stringify({username, password})});
  const {token} = await signUp.json();
  const auth = {...json, "Authorization": "Token " + token};
  const made = await fetch(api + "/api/games", {
    method: "POST", headers: auth, body: JSON.stringify({variant: "spanish", deal: 7})});
  const game = await made.json();
  const ws = new WebSocket(api.replace("http", "ws") + "/ws/games/" + game.id,
                           ["solitaire-arena", "token." + token]);
  const frames = [];
  const next = () => new Promise((resolve, reject) => {
    ws.onmessage = (e) => { frames.push(JSON.parse(e.data)); resolve(); };
    ws.onclose = (e) => reject(new Error("closed " + e.code + " " + e.reason));
  });
  await next();  // the state on connect
  const move = frames[0].d.legal_moves[0];
  ws.send(JSON.stringify({t: "move", d: {move, v: frames[0].v, id: "m-1"}}));
  await next();  // ack
  await next();  // state
  const protocol = ws.protocol;
  ws.close();
  const history = await fetch(api + "/api/games/" + game.id + "/moves",
                              {headers: {"Authorization": "Token " + token}});
  let cookieRead = "read";
  try {
    await fetch(api + "/api/me", {credentials: "include"});
  } catch (e) {
    cookieRead = "refused";
  }
  return {signUp: signUp.status, made: made.status, protocol, move,
          frames: frames.map((f) => [f.t, f.v ?? null, f.d.id ?? null]),
          history: await history.json(), cookieRead};
}"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_site() -> Iterator[str]:
    """A page at http://localhost:PORT: another origin (and another site) than the server's
    http://127.0.0.1:PORT."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_client_on_another_site_plays_with_its_token(
    open_page,  # noqa: ANN001
    server: Server,
    other_site: str,
) -> None:
    page = open_page()
    page.goto(other_site)
    username = unique_name("elsewhere")
    result = page.evaluate(PLAY_JS, [server.base_url, username, PASSWORD])
    assert (result["signUp"], result["made"]) == (201, 201)
    assert result["protocol"] == "solitaire-arena"  # the token is not sent back
    assert result["frames"] == [["state", 0, None], ["ack", None, "m-1"], ["state", 1, None]]
    assert [(row["n"], row["move"]) for row in result["history"]] == [(1, result["move"])]
    # A credentialed request is refused by the browser: no other site reads a visitor's session.
    assert result["cookieRead"] == "refused"
