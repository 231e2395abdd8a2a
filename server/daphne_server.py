"""The daphne this project runs (`server.worker`): daphne's server, with two changes.

- **Several text frames in one ASGI message.** A move answers its socket with two frames,
  `ack` then `state` (PROTOCOL.md). Sent as two `websocket.send` messages, each went the whole
  way through Channels, daphne's reply handling and autobahn's frame writer on its own. The
  server advertises the ASGI extension `websocket.send_many` in a socket's scope, and a message
  `{"type": "websocket.send_many", "texts": [...]}` writes its frames in order, in one write to
  the transport. A consumer on a server without the extension (Channels' test communicator, or
  plain daphne) sends them one by one (server.lean_consumer.LeanWebsocketConsumer.send_texts).
- **A frame too large is refused with a close, not a dropped connection** (`failByDrop`): see
  `ProjectWebSocketFactory`.
- **A client that does not read is dropped** once more than WS_SEND_BUFFER_BYTES wait for it
  in the server (`ProjectWebSocketProtocol.sendData`).
- **A client that sends far faster than it is served is closed with 4429** at once, its
  waiting frames dropped, and pings past a rate go unanswered
  (`ProjectWebSocketProtocol.onMessage`, `onPing`).
- **A body too large is refused from its headers** (`ProjectWebRequest.gotLength`).
- **A request head the server will not read gets an answer** (`ProjectHTTPChannel`).
- **A server that stops answers what its sockets have sent, then closes them with 1001**
  (`ProjectServer.close_sockets`).
"""

from __future__ import annotations

import json
import logging
import struct
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import daphne.server
from autobahn.exception import Disconnected
from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.protocols.policies import WrappingFactory
from twisted.web import http

from server.body_rules import body_refusal
from server.cors import RAW_HEADERS
from server.lean_consumer import CLOSE_ABUSE, SEND_MANY, LeanWebsocketConsumer, TokenBucket

log = logging.getLogger(__name__)
# Reason phrases: Python's, with RFC 9110's names where Python 3.11 keeps older ones.
_PHRASES = {status.value: status.phrase.encode("ascii") for status in HTTPStatus} | {
    413: b"Content Too Large",
    414: b"URI Too Long",
}

_TEXT = 0x81  # FIN, opcode 1 (text); a server's frames are not masked (RFC 6455, 5.1)
_CLOSE_FRAME_HEAD = b"\x88"  # FIN, opcode 8 (close)
CLOSE_GOING_AWAY = 1001  # RFC 6455: the server is going down (ProjectServer.close_sockets)
_GOING_AWAY_REASON = b"The server is restarting: connect again."
# Below this many frames waiting, a socket is not looked at further: a client that waits for
# its answers has one or two waiting at most, however fast it plays.
_QUIET_WAITING = 8
# The close codes for a client's own protocol errors: a malformed frame, a text that is not UTF-8.
_PROTOCOL_ERRORS = (1002, 1007)


# An API client on another site reads these refusals too (server.cors).
_CORS_LINES = "".join(f"{name.decode()}: {value.decode()}\r\n" for name, value in RAW_HEADERS)

_SHORT_HEADERS = [bytes((_TEXT, n)) for n in range(126)]


def text_frame(payload: bytes) -> bytes:
    """One unfragmented, unmasked, uncompressed text frame (RFC 6455, 5.2)."""
    n = len(payload)
    if n < 126:
        return _SHORT_HEADERS[n] + payload
    if n < 0x10000:
        return struct.pack("!BBH", _TEXT, 126, n) + payload
    return struct.pack("!BBQ", _TEXT, 127, n) + payload


def unsent_bytes(transport: Any) -> int:
    """Bytes written to a Twisted TCP transport and not yet taken by the kernel; 0 for a
    transport that does not say (another kind, under TLS)."""
    try:
        return len(transport.dataBuffer) - transport.offset + transport._tempDataLen
    except AttributeError:
        return 0


def waiting_bytes(queue: Any) -> int:
    """The bytes of the frames waiting in a socket's application queue (daphne's
    asyncio.Queue of ASGI messages), or 0 where it cannot tell."""
    try:
        messages = queue._queue
    except AttributeError:
        return 0
    return sum(len(m.get("text") or m.get("bytes") or "") for m in messages)


class ProjectWebSocketProtocol(WebSocketProtocol):
    # Set from WS_SEND_BUFFER_BYTES when the server starts (ProjectServer.run); 0: no limit.
    send_buffer_limit = 0
    # Set from WS_MAX_WAITING_FRAMES and WS_MAX_WAITING_BYTES (ProjectServer.run); 0: no limit.
    max_waiting_frames = 0
    max_waiting_bytes = 0
    # Pings answered per second, and in a burst (WS_RATE_PER_SECOND, WS_RATE_BURST); 0: all.
    ping_rate = 0.0
    ping_burst = 0.0
    _pings: TokenBucket | None = None  # made at the first ping
    flooded = False

    def onMessage(self, payload: bytes, isBinary: bool) -> None:  # noqa: N802, N803
        """As daphne's, unless the client sends far faster than its frames are handled.

        daphne queues every frame for the application without bound, and the consumer takes
        them one at a time; its rate limit (games.consumers.RateLimiter) sees a frame only
        when it reaches it. A client that writes frames a thousand at a time grew a worker by
        300 MB in 30 s, held every other socket of the process behind its backlog (a health
        check took 7-10 s), and heard its 4429 only once the backlog was worked through. Past
        WS_MAX_WAITING_FRAMES frames, or WS_MAX_WAITING_BYTES, waiting unhandled, the socket
        is closed with 4429 now, and what it had waiting is dropped, never played."""
        if self.flooded or self.state != self.STATE_OPEN:
            return  # or after this server's close frame: nothing it hears then is answered
        queue = getattr(self, "application_queue", None)
        if queue is not None and queue.qsize() >= _QUIET_WAITING and self._flooding(queue):
            self.flooded = True
            log.warning("closed %s with 4429: %d frames waiting", self.peer, queue.qsize())
            _drop_frames(queue)
            self.sendClose(code=CLOSE_ABUSE, reason="Too many frames waiting: slow down.")
            return
        super().onMessage(payload, isBinary)

    def _max_message_size_exceeded(self, msg_size: int, max_msg_size: int, reason: str) -> None:
        """A frame over daphne's 1 MiB read limit, sixteen times the 64 KiB a frame may have:
        abuse, closed with 4429 as PROTOCOL.md closes for abuse, with a reason that says why.
        autobahn's own close, 1009, is a code a client written from PROTOCOL.md does not know.
        The frame is not read."""
        log.warning("closed %s with 4429: a frame of %d bytes", self.peer, msg_size)
        self._fail_connection(CLOSE_ABUSE, f"Frame too large: over {max_msg_size} bytes.")

    def _flooding(self, queue: Any) -> bool:
        frames, size = self.max_waiting_frames, self.max_waiting_bytes
        return bool(frames and queue.qsize() >= frames) or bool(
            size and waiting_bytes(queue) > size
        )

    def handle_reply(self, message: dict) -> None:
        """As daphne's, but an application's close keeps its reason (ASGI's `websocket.close`
        has one): daphne 4.2 sends only the code, so a client closed for holding too many
        sockets heard 4429 and an empty reason where docs/websocket.md promises one."""
        if message.get("type") == "websocket.close" and self._close_with_reason(message):
            return
        super().handle_reply(message)

    def _close_with_reason(self, message: dict) -> bool:
        """Send the close with its reason, if it has one autobahn lets an application send
        (RFC 6455, 5.5 and 7.4) on an open socket; False leaves the close to daphne."""
        reason, code = message.get("reason"), message.get("code") or 1000
        if not reason or self.state != self.STATE_OPEN or len(reason.encode()) > 123:
            return False
        if code != 1000 and not 3000 <= code <= 4999:
            return False
        self.sendClose(code=code, reason=reason)
        return True

    def onOpen(self) -> None:  # noqa: N802 - autobahn's name
        """A socket whose handshake ends while the server drains its sockets is not read
        either: it is closed with the others (ProjectServer.close_sockets)."""
        super().onOpen()
        if getattr(self.server, "stopping", False):
            self.transport.pauseProducing()

    def onPing(self, payload: bytes) -> None:  # noqa: N802
        """Answer pings up to the rate frames are allowed at (a token bucket); past it they go
        unanswered, so a ping flood costs the server a frame's parse, not a write as well."""
        if self.ping_rate:
            if self._pings is None:
                self._pings = TokenBucket(self.ping_rate, self.ping_burst)
            if not self._pings.take():
                return
        super().onPing(payload)

    def dropConnection(self, abort: bool = False) -> None:  # noqa: N802 - autobahn's name
        """As autobahn's, but with a TCP close, not a reset, after a closing handshake that
        completed, and right after this server failed the connection for a protocol error of
        the client's (1002, 1007).

        Autobahn, as a server, ends every closing handshake with a reset (abort) once the
        client has answered. A client whose library had not yet handed the frames before the
        close to its reader (the `ack` and `state` a stopping server sent last) saw the reset,
        not them. A close frame that breaks the protocol (a one-byte payload, a code such as
        999, a reason that is not UTF-8) is failed with 1002 or 1007, and autobahn then takes
        that same frame for the client's answer to it and drops the connection with abort:
        a reset, which discarded the close frame just written. RFC 6455 (7.1.7) says the
        server SHOULD send it; the client saw its socket vanish with no code."""
        if abort and (
            self.wasClean or (self.failedByMe and self.localCloseCode in _PROTOCOL_ERRORS)
        ):
            abort = False
        super().dropConnection(abort)

    def sendData(self, data: bytes, sync: bool = False, chopsize: int | None = None) -> None:  # noqa: N802
        """As autobahn's, then drop the connection if its client has stopped reading.

        Twisted has no back-pressure here: what the kernel will not take waits in the
        transport's buffer for as long as the client does not read, and every frame for it
        (its own answers, or a watched game's states) adds to it. A client that reads never
        has more than a few frames waiting; past the limit it has stopped, and it is cut off
        (no close frame: it would not read it either) before it takes the server's memory."""
        super().sendData(data, sync, chopsize)
        limit = self.send_buffer_limit
        # Only while open, and never on the close frame (sent while still open): a close that
        # crosses the limit is left to the close handshake; dropped mid-close, autobahn would
        # settle the close twice and never report it to the consumer.
        if (
            limit
            and self.state == self.STATE_OPEN
            and data[:1] != _CLOSE_FRAME_HEAD
            and self.transport is not None
        ):
            waiting = unsent_bytes(self.transport)
            if waiting > limit:
                log.warning("dropped %s: %d bytes waiting for it to read", self.peer, waiting)
                self.dropConnection(abort=True)

    def send_texts(self, texts: list[str]) -> None:
        """Send text frames, in order; Disconnected if the socket is no longer open, as
        autobahn's `sendMessage` raises it.

        Where the frames are plain (no compression negotiated, no fragmenting, no masking or
        timing, which this server never sets up), they are built here and written together:
        the same bytes autobahn's `sendMessage` writes, one frame after another.
        """
        if self.state != self.STATE_OPEN:
            if self.state == self.STATE_CONNECTING:
                raise ValueError("Socket has not been accepted, so cannot send over it")
            raise Disconnected("Attempt to send on a closed protocol")
        payloads = [text.encode("utf8") for text in texts]
        sizes = list(map(len, payloads))
        if not self._plain_frames(max(sizes, default=0)):
            for payload in payloads:
                self.sendMessage(payload)
            return
        stats = self.trafficStats
        size = sum(sizes)
        stats.outgoingWebSocketMessages += len(payloads)
        stats.outgoingWebSocketFrames += len(payloads)
        stats.outgoingOctetsAppLevel += size
        stats.outgoingOctetsWebSocketLevel += size
        self.sendData(b"".join([text_frame(p) for p in payloads]))

    def _plain_frames(self, longest: int) -> bool:
        limit = self.maxMessagePayloadSize
        return (
            self._perMessageCompress is None
            and not self.autoFragmentSize
            and not self.maskServerFrames
            and not self.trackedTimings
            and not (limit and longest > limit)
        )


def _drop_frames(queue: Any) -> None:
    """Empty an application queue of the frames waiting in it (nothing else is waiting there
    while a socket is open; anything else is put back)."""
    kept = []
    while not queue.empty():
        message = queue.get_nowait()
        if message.get("type") != "websocket.receive":
            kept.append(message)
    for message in kept:
        queue.put_nowait(message)


class ProjectWebSocketFactory(WebSocketFactory):
    """daphne's factory, making ProjectWebSocketProtocol, and closing a socket that sends a
    frame over daphne's limit with a close code instead of dropping it.

    daphne reads at most 1 MiB per message (`--websocket_max_message_size`); a frame up to that
    reaches the consumer, which refuses anything over 64 KiB with `bad_message`. A larger one
    autobahn refuses before reading it, and by default by cutting the TCP connection
    (`failByDrop`): the client saw its socket vanish with no close code and no reason. With the
    closing handshake it gets 4429 and a reason (ProjectWebSocketProtocol); protocol errors get
    WebSocket's own codes (1002, 1007).
    """

    protocol = ProjectWebSocketProtocol

    def resetProtocolOptions(self) -> None:  # noqa: N802 - autobahn's name
        super().resetProtocolOptions()
        self.failByDrop = False


# A refused body is read and dropped for up to this many bytes or seconds before the
# connection closes: a client still sending when the server closes would get a reset (a
# "broken pipe" where urllib sent 5 MB) instead of its 413, which the kernel may discard.
LINGER_BYTES = 8 * 1024 * 1024
LINGER_SECONDS = 2.0


class _Discarded:
    """Where a refused request's body goes while its connection closes: nowhere, counted."""

    def __init__(self, on_full: Any) -> None:
        self.seen = 0
        self.on_full = on_full

    def write(self, data: bytes) -> None:
        self.seen += len(data)
        if self.seen > LINGER_BYTES:
            self.on_full()

    def seek(self, *args: Any) -> None:
        pass

    def tell(self) -> int:
        """Twisted asks once the whole body is in (`Request.requestReceived`): without it, a
        body that came whole in the request's first read broke the connection before the
        answer already written could leave."""
        return self.seen

    def read(self, *args: Any) -> bytes:
        return b""  # a form body is parsed from here: there is none

    def close(self) -> None:
        pass


def early_response(code: str, detail: str, status: int, head_only: bool) -> bytes:
    """A whole HTTP/1.1 response with the API's error body, written straight to the socket
    (the headers alone to a HEAD)."""
    body = json.dumps({"code": code, "detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {_PHRASES[status].decode()}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{_CORS_LINES}Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + (b"" if head_only else body)


class ProjectWebRequest(WebRequest):
    """daphne's request, refusing a body the server would refuse anyway before it arrives.

    daphne reads a request's whole body (to a temporary file past 100 KB) before the
    application sees it, so the 413 of server.middleware came only once the client had sent
    it all: 300 MB took 9 s of upload and disk, and a Content-Length with no body behind it
    held the connection until it timed out. The length is known with the headers: past the
    limit, or chunked (which the API refuses with 411, its size unknown), on any path, the
    answer is written then; what of the body follows is read and dropped for a moment
    (LINGER_BYTES, LINGER_SECONDS), so that the client reads its answer, and the connection
    closes, the rest unread. No `100 Continue` follows the answer.
    """

    # Set from MAX_REQUEST_BYTES when the server starts (ProjectServer.run); 0: no limit.
    body_limit = 0
    refused = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Twisted parses a POST's form body into `args`, which daphne never reads (the
        # application gets the body as it came): work for nothing, and a body labelled
        # `multipart/form-data` that did not parse as one got Twisted's bare 400 ("the
        # request's head is malformed") and a closed connection, not the API's 415.
        self._parsePOSTFormSubmission = False

    def setResponseCode(self, code: int, message: bytes | None = None) -> None:  # noqa: N802
        """As Twisted's, with a reason phrase for the codes its table lacks: a 429 went out
        as `429 Unknown Status`."""
        if message is None and code not in http.RESPONSES and code in _PHRASES:
            message = _PHRASES[code]
        super().setResponseCode(code, message)

    closing_refused = False
    _linger: Any = None

    def gotLength(self, length: int | None) -> None:  # noqa: N802 - Twisted's name
        refusal = body_refusal(length, self.body_limit) if self.body_limit else None
        if refusal is None:
            return super().gotLength(length)
        from twisted.internet import reactor  # the one daphne runs, installed by now

        command = getattr(self.channel, "_command", b"")
        code, detail, status = refusal
        log.warning(
            "refused %s %s from %s: %s",
            command.decode("latin-1"),
            getattr(self.channel, "_path", b"").decode("latin-1")[:200],
            getattr(self.channel.transport.getPeer(), "host", "?"),
            detail,
        )
        self.refused = True
        self.content = _Discarded(self.close_refused)
        self.requestHeaders.removeHeader(b"expect")  # else Twisted says 100 Continue after it
        self.channel.transport.write(
            early_response(code, detail, status, head_only=command == b"HEAD")
        )
        self._linger = reactor.callLater(LINGER_SECONDS, self.close_refused)

    def close_refused(self) -> None:
        if self.closing_refused:
            return
        self.closing_refused = True
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        self.channel.loseConnection()

    def process(self) -> Any:
        if self.refused:
            self.close_refused()  # the whole body came, and went nowhere
            return None
        if not self.uri.startswith(b"/") and not self._origin_form():
            return self._bad_request(
                "The request target must be a path, or an absolute http(s) URL."
            )
        if self.clientproto == b"HTTP/1.1" and not self.requestHeaders.hasHeader(b"host"):
            # RFC 9112, 3.2: a server MUST answer 400 to an HTTP/1.1 request with no Host.
            return self._bad_request("An HTTP/1.1 request needs a Host header.")
        return super().process()

    def _bad_request(self, detail: str) -> None:
        """Answer a request the application never sees with the API's JSON 400, and close."""
        head_only = self.method == b"HEAD"
        self.channel.transport.write(early_response("bad_request", detail, 400, head_only))
        self.channel.loseConnection()

    def _origin_form(self) -> bool:
        """Read an absolute-form target (`GET http://host/path`, as a client may send to a
        server, RFC 9112 3.2.2) as the path it names, its authority as the Host (the header
        sent beside it is ignored): Twisted passed the whole URL on as the path, which no route
        matched, and with DEBUG on Django answered with its debug page. False for any other
        target that is not a path (`*`): there is nothing here it could name."""
        parts = urlsplit(self.uri)
        if parts.scheme not in (b"http", b"https") or not parts.netloc:
            return False
        path = parts.path or b"/"
        self.uri = path + (b"?" + parts.query if parts.query else b"")
        self.path = path
        self.requestHeaders.setRawHeaders(b"host", [parts.netloc])
        return True

    def connectionLost(self, reason: Any) -> None:  # noqa: N802 - Twisted's name
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        super().connectionLost(reason)


class ProjectHTTPChannel(http.HTTPChannel):
    """Twisted's HTTP channel, answering a request head it will not read.

    Twisted reads a line of the head up to 16 KB (MAX_LENGTH) and the head up to 16 KB in all
    (totalHeadersSize). A longer line closed the connection with no answer at all (a long
    query string, a cookie grown too large), and a longer head or one it cannot parse got a
    bare `400 Bad Request` with no body (so did more than 500 header fields). Here a request
    line too long gets 414, a header or headers too long or too many 431, a malformed head 400,
    each with the API's JSON error body. What the
    client still sends is read and dropped for a moment before the connection closes, as a
    refused body is (LINGER_BYTES, LINGER_SECONDS): closed with unread data, the kernel
    resets the connection, and the client may never read its answer. Only the head goes
    through this class: an upgraded WebSocket's frames go to its own protocol.
    """

    refused_head = False
    _linger: Any = None
    _discarded = 0
    # Seconds a request, its head and its body, may take to arrive in full
    # (HTTP_REQUEST_SECONDS; 0: no limit). Twisted's idle timeout starts again with every byte:
    # a client that sent one header line every few seconds held its connection for over an
    # hour, and 20,000 such took every file the process could open; a body under the size
    # limit, sent a few bytes a second, did the same after its head.
    request_seconds = 0.0
    _request_timer: Any = None
    _in_body = False  # the request's head is read, its body is on its way

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        if not self.refused_head:
            # The request's time starts with its first byte, not its first whole line: a
            # request line sent a byte every few seconds, never ended, had no limit at all.
            if data and self._request_timer is None and self.request_seconds:
                self._start_request_timer()
            return super().dataReceived(data)
        self._discarded += len(data)
        if self._discarded > LINGER_BYTES:
            self._close_refused()
        return None

    def lineReceived(self, line: bytes) -> None:  # noqa: N802 - Twisted's name
        if self.refused_head:
            return  # lines of the same read, after the one refused
        if self._request_timer is None and self.request_seconds:
            self._start_request_timer()  # a request after one ended in the same read
        if self._receivedHeaderSize + len(line) > self.totalHeadersSize:
            return self._refuse_head(
                431, f"The request head is over {self.totalHeadersSize} bytes."
            )
        super().lineReceived(line)

    def headerReceived(self, line: bytes) -> bool:  # noqa: N802 - Twisted's name
        if self._receivedHeaderCount >= self.maxHeaders:
            self._refuse_head(431, f"The request has more than {self.maxHeaders} header fields.")
            return False
        return super().headerReceived(line)

    def allHeadersReceived(self) -> None:  # noqa: N802 - Twisted's name
        self._in_body = True
        super().allHeadersReceived()

    def _start_request_timer(self) -> None:
        from twisted.internet import reactor  # the one daphne runs, installed by now

        self._request_timer = reactor.callLater(self.request_seconds, self._too_slow)
        self._in_body = False

    def _stop_request_timer(self) -> None:
        timer, self._request_timer = self._request_timer, None
        if timer is not None and timer.active():
            timer.cancel()

    def _too_slow(self) -> None:
        self._request_timer = None
        part = "body" if self._in_body else "head"
        self._refuse_head(
            408, f"The request {part} took over {self.request_seconds:g} s to arrive."
        )

    def allContentReceived(self) -> None:  # noqa: N802 - Twisted's name
        self._stop_request_timer()
        if not self.refused_head:  # refused at its last header: not a request to serve
            super().allContentReceived()

    def lineLengthExceeded(self, line: bytes) -> None:  # noqa: N802 - Twisted's name
        if getattr(self, "_HTTPChannel__first_line", 0):  # no request line read yet
            return self._refuse_head(414, f"The request line is over {self.MAX_LENGTH} bytes.")
        return self._refuse_head(431, f"A request header is over {self.MAX_LENGTH} bytes.")

    def _respondToBadRequestAndDisconnect(self) -> None:  # noqa: N802 - Twisted's name
        self._refuse_head(400, "The request's head is malformed.")

    def _refuse_head(self, status: int, detail: str) -> None:
        if self.refused_head:
            return
        from twisted.internet import reactor  # the one daphne runs, installed by now

        self.refused_head = True
        self.setTimeout(None)
        log.warning(
            "refused a request from %s: %s",  # the detail says what: its head, or its time
            getattr(self.transport.getPeer(), "host", "?"),
            detail,
        )
        self.transport.write(early_response("bad_request", detail, status, head_only=False))
        self._linger = reactor.callLater(LINGER_SECONDS, self._close_refused)

    def _close_refused(self) -> None:
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        self.transport.loseConnection()

    def connectionLost(self, reason: Any) -> None:  # noqa: N802 - Twisted's name
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        self._stop_request_timer()
        super().connectionLost(reason)


class PeerLimit(WrappingFactory):
    """At most `limit` connections open at once from one address; one more is closed as it
    opens. 20,000 connections from one client (slow request heads, or idle WebSockets of one
    account) took every file the process could open, and no one else got in.

    A wrapper around each connection's protocol sees it end whatever it has become: daphne
    hands an upgraded connection to its WebSocket protocol through the wrapper
    (`ProtocolWrapper.wrappedProtocol`)."""

    def __init__(self, wrapped: Any, limit: int) -> None:
        super().__init__(wrapped)
        self.limit = limit
        self.open: dict[str, int] = {}
        self.refused_at: dict[str, float] = {}  # when a refusal from an address was last logged

    def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 - Twisted's name
        host = getattr(addr, "host", None)
        if host is not None and self.open.get(host, 0) >= self.limit:
            now = time.monotonic()
            if now - self.refused_at.get(host, 0.0) > 10:  # one line per address per 10 s
                self.refused_at[host] = now
                log.warning("refused connections from %s: %d open", host, self.open[host])
            return None
        protocol = super().buildProtocol(addr)
        if host is not None:
            self.open[host] = self.open.get(host, 0) + 1
            protocol.peer_host = host
        return protocol

    def unregisterProtocol(self, protocol: Any) -> None:  # noqa: N802 - Twisted's name
        super().unregisterProtocol(protocol)
        host = getattr(protocol, "peer_host", None)
        if host is not None:
            left = self.open.get(host, 0) - 1
            if left > 0:
                self.open[host] = left
            else:
                self.open.pop(host, None)
                self.refused_at.pop(host, None)


def http_factory(server: Any) -> Any:
    """The factory daphne listens with: the project's, behind PeerLimit if there is one."""
    from django.conf import settings

    factory = ProjectHTTPFactory(server)
    limit = settings.HTTP_MAX_CONNECTIONS_PER_ADDRESS
    return PeerLimit(factory, limit) if limit else factory


class ProjectHTTPFactory(HTTPFactory):
    def protocol(self) -> Any:
        """The channel of each connection: Twisted's factory wraps its HTTPChannel in the
        proxy that would switch it to HTTP/2 (`_genericHTTPChannelProtocolFactory`); this
        wraps the project's."""
        return http._GenericHTTPChannelProtocol(ProjectHTTPChannel())

    def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 - Twisted's name
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = ProjectWebRequest
        return protocol


class ProjectServer(daphne.server.Server):
    def run(self) -> None:
        from django.conf import settings  # daphne has imported the application: Django is set up

        self.ports: list[Any] = []  # the listening ports (listen_success)
        ProjectWebSocketProtocol.send_buffer_limit = settings.WS_SEND_BUFFER_BYTES
        ProjectWebSocketProtocol.max_waiting_frames = settings.WS_MAX_WAITING_FRAMES
        ProjectWebSocketProtocol.max_waiting_bytes = settings.WS_MAX_WAITING_BYTES
        ProjectWebSocketProtocol.ping_rate = settings.WS_RATE_PER_SECOND
        ProjectWebSocketProtocol.ping_burst = settings.WS_RATE_BURST
        ProjectWebRequest.body_limit = settings.MAX_REQUEST_BYTES
        ProjectHTTPChannel.request_seconds = settings.HTTP_REQUEST_SECONDS
        # daphne's `run` builds its factories from this module's names for them.
        daphne.server.WebSocketFactory = ProjectWebSocketFactory
        daphne.server.HTTPFactory = http_factory
        super().run()

    def listen_success(self, port: Any) -> None:
        self.ports.append(port)  # daphne keeps only its address
        super().listen_success(port)

    def kill_all_applications(self) -> Deferred:
        """daphne's (its trigger before the reactor stops, which cancels every socket's
        consumer), once the sockets have been answered and closed (`close_sockets`). Twisted
        runs all of a phase's triggers at once, so a trigger of our own beside daphne's had
        the consumers cancelled while it waited for their answers. First the server stops
        listening: a connection it took while it drained would be cut without a word."""
        for port in self.ports:
            port.stopListening()
        try:
            closed = self.close_sockets()
        except Exception:  # noqa: BLE001 - the server stops all the same
            log.exception("The sockets could not be drained and closed")
            closed = None
        if closed is None:
            return super().kill_all_applications()

        def kill(failure: Any) -> Deferred:
            if failure is not None:
                log.error("Draining the sockets failed: the server stops now: %s", failure)
            return super(ProjectServer, self).kill_all_applications()

        return closed.addBoth(kill)

    # How long a stopping server lets its sockets' frames and its requests be answered (a
    # move being written is committed, and its `ack` and `state` go out), then how long it
    # waits for the clients to answer its close.
    drain_wait = 2.0
    close_wait = 1.0
    stopping = False

    def close_sockets(self) -> Deferred | None:
        """As the server stops, stop reading the open sockets and let every frame they have
        sent, and every request in hand, be answered (up to `drain_wait` seconds), then end
        each socket with 1001 (going away) and a reason that says to connect again, and wait
        up to `close_wait` seconds for the clients to answer. Without the drain a move whose
        batch was being written was committed and never acknowledged: its client could only
        tell from the state once it had connected again. Without the close the reactor cut
        each connection without a close frame, and a client saw 1006, which reads as its own
        network failing. A socket that opens meanwhile is not read either (`onOpen`), and is
        closed with the others; frames still waiting when the drain gives up are dropped,
        never played.

        RFC 6455's 1001 is outside the codes autobahn's `sendClose` lets an application send
        (1000, 3000-4999), so the frame goes through the method beneath it."""
        self.stopping = True
        paused = self._open_sockets()
        if not paused and self._all_answered():
            return None
        for protocol in paused:
            protocol.transport.pauseProducing()
        quiet = 0

        def drained() -> bool:
            nonlocal quiet
            # Quiet twice in a row: a frame taken off a queue is in hand within a loop pass.
            quiet = quiet + 1 if self._all_answered() else 0
            return quiet >= 2

        done = _until(drained, self.drain_wait, 0.01)
        done.addCallback(lambda _: self._close_drained(paused))
        return done

    def _close_drained(self, paused: list[Any]) -> Deferred:
        """Send 1001 to every socket still open, dropping the frames it has left waiting (not
        answered in time: not played either), and read again, for the clients' answers: fired
        once every socket has closed, or after `close_wait` seconds."""
        sockets = list(dict.fromkeys([*paused, *self._open_sockets()]))
        for protocol in sockets:
            if protocol.state == protocol.STATE_OPEN:
                queue = getattr(protocol, "application_queue", None)
                if queue is not None:
                    _drop_frames(queue)
                protocol.sendCloseFrame(code=CLOSE_GOING_AWAY, reasonUtf8=_GOING_AWAY_REASON)
            if protocol.transport is not None:
                protocol.transport.resumeProducing()
        return _until(
            lambda: all(p.state == p.STATE_CLOSED for p in sockets), self.close_wait, 0.02
        )

    def _open_sockets(self) -> list[Any]:
        return [
            p
            for p in self.connections
            if isinstance(p, WebSocketProtocol) and p.state == p.STATE_OPEN
        ]

    def _all_answered(self) -> bool:
        """Whether no socket of this process has a frame waiting for its consumer or being
        handled, and no HTTP request is being answered."""
        if LeanWebsocketConsumer.handling:
            return False
        for protocol, details in list(self.connections.items()):
            if (
                isinstance(protocol, WebSocketProtocol)
                and protocol.state != protocol.STATE_CONNECTING
            ):
                queue = getattr(protocol, "application_queue", None)
                if (
                    protocol.state == protocol.STATE_OPEN
                    and queue is not None
                    and not queue.empty()
                ):
                    return False
                continue
            # An HTTP request, or a handshake, being answered (a socket that ends its handshake
            # now opens paused: onOpen).
            application = details.get("application_instance")
            if application is not None and not application.done():
                return False
        return True

    def create_application(self, protocol: Any, scope: dict) -> Any:
        if scope.get("type") == "websocket" and isinstance(protocol, ProjectWebSocketProtocol):
            scope["extensions"] = {**scope.get("extensions", {}), SEND_MANY: {}}
        return super().create_application(protocol, scope)

    async def handle_reply(self, protocol: Any, message: dict) -> None:
        if message.get("type") != SEND_MANY:
            return await super().handle_reply(protocol, message)
        if protocol not in self.connections or self.connections[protocol].get("disconnected"):
            return  # as daphne does for a single frame
        protocol.send_texts(message["texts"])


def _until(test: Callable[[], bool], seconds: float, every: float) -> Deferred:
    """A Deferred fired once `test()` holds, asked now and then every `every` seconds, or
    once `seconds` have passed; failed if `test` raises."""
    done: Deferred = Deferred()
    deadline = time.monotonic() + seconds

    def ask() -> None:
        try:
            if test() or time.monotonic() >= deadline:
                done.callback(None)
            else:
                reactor.callLater(every, ask)
        except Exception:  # noqa: BLE001 - the caller hears it
            done.errback()

    ask()
    return done


class ProjectCommandLine(CommandLineInterface):
    server_class = ProjectServer
