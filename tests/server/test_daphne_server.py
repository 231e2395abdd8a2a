"""server.daphne_server: several text frames in one ASGI message, written as autobahn writes
them; and the consumer side of it (server.lean_consumer.LeanWebsocketConsumer.send_texts)."""

from __future__ import annotations

import asyncio

import pytest
from autobahn.exception import Disconnected
from twisted.internet.abstract import FileDescriptor
from twisted.internet.testing import StringTransport
from websockets.frames import Opcode

from server.daphne_server import (
    ProjectServer,
    ProjectWebSocketFactory,
    ProjectWebSocketProtocol,
    text_frame,
    unsent_bytes,
)
from server.lean_consumer import SEND_MANY, LeanWebsocketConsumer
from tests.live_server import parse_frames, run_python

# Payload sizes on each side of the three length encodings (RFC 6455, 5.2).
SIZES = (0, 1, 125, 126, 65535, 65536)


class UnreadTransport(StringTransport):
    """A transport whose client reads nothing: all it was given waits in its buffer, kept as
    Twisted's TCP transport keeps it (the attributes `unsent_bytes` reads)."""

    offset = 0
    _tempDataLen = 0
    aborted = False

    @property
    def dataBuffer(self) -> bytes:  # noqa: N802 - Twisted's name
        return self.value()

    def abortConnection(self) -> None:  # noqa: N802
        self.aborted = True

    def unregisterProducer(self) -> None:  # noqa: N802 - as lenient as Twisted's TCP transport
        self.producer = None


def open_protocol(
    transport: StringTransport | None = None,
) -> tuple[ProjectWebSocketProtocol, StringTransport]:
    protocol = ProjectWebSocketFactory(None).buildProtocol(None)
    transport = transport or StringTransport()
    protocol.makeConnection(transport)
    protocol.state = protocol.STATE_OPEN  # as after the opening handshake
    return protocol, transport


@pytest.mark.parametrize("size", SIZES)
def test_a_text_frame_reads_back_as_the_text_it_carries(size: int):
    text = "é" * (size // 2) + "x" * (size % 2)
    (frame,) = parse_frames(text_frame(text.encode()))
    assert (frame.opcode, frame.fin, frame.data.decode()) == (Opcode.TEXT, True, text)


def test_send_texts_writes_the_bytes_and_counts_autobahns_send_message_does():
    texts = ["x" * n for n in SIZES] + ['{"t":"ack","d":{"id":"m-7"}}', "ünïcode"]
    ours, written = open_protocol()
    autobahns, expected = open_protocol()
    ours.send_texts(texts)
    for text in texts:
        autobahns.sendMessage(text.encode())
    assert written.value() == expected.value()
    assert [f.data.decode() for f in parse_frames(written.value())] == texts
    assert ours.trafficStats.__json__() == autobahns.trafficStats.__json__()


def test_send_texts_leaves_frames_it_does_not_build_to_autobahn():
    """Compression negotiated, or a frame over the message limit: autobahn's own path, which
    compresses, or refuses the frame."""
    protocol, transport = open_protocol()
    calls = []
    protocol.sendMessage = lambda payload: calls.append(payload)  # type: ignore[method-assign]
    protocol.maxMessagePayloadSize = 10
    protocol.send_texts(["short", "x" * 11])
    assert calls == [b"short", b"x" * 11] and transport.value() == b""


def test_send_texts_on_a_closed_socket_raises_disconnected_as_autobahn_does():
    protocol, transport = open_protocol()
    protocol.state = protocol.STATE_CLOSED
    with pytest.raises(Disconnected):
        protocol.send_texts(["late"])
    assert transport.value() == b""


def test_send_texts_before_accept_is_an_application_error():
    protocol, _ = open_protocol()
    protocol.state = protocol.STATE_CONNECTING
    with pytest.raises(ValueError, match="not been accepted"):
        protocol.send_texts(["early"])


async def test_the_server_offers_the_extension_to_websockets_and_routes_its_messages():
    scopes: list[dict] = []

    async def app(scope: dict, receive, send) -> None:  # noqa: ANN001
        scopes.append(scope)

    server = ProjectServer(app, endpoints=["tcp:port=0"])  # not run: nothing listens
    protocol, transport = open_protocol()
    server.connections = {protocol: {}}
    server.create_application(protocol, {"type": "websocket", "extensions": {"x": {}}})
    await asyncio.sleep(0)
    assert scopes[0]["extensions"] == {"x": {}, SEND_MANY: {}}

    await server.handle_reply(protocol, {"type": SEND_MANY, "texts": ["a", "b"]})
    assert [f.data for f in parse_frames(transport.value())] == [b"a", b"b"]
    server.connections[protocol]["disconnected"] = True
    await server.handle_reply(protocol, {"type": SEND_MANY, "texts": ["gone"]})
    assert len(parse_frames(transport.value())) == 2  # dropped, as daphne drops a single send


def consumer_with(extensions: dict | None, sent: list) -> LeanWebsocketConsumer:
    consumer = LeanWebsocketConsumer()
    consumer.scope = {"type": "websocket"} if extensions is None else {"extensions": extensions}

    async def send(message: dict) -> None:
        sent.append(message)

    consumer.base_send = send
    return consumer


async def test_a_consumer_sends_its_frames_in_one_message_where_the_server_offers_it():
    sent: list = []
    await consumer_with({SEND_MANY: {}}, sent).send_texts(["ack", "state"])
    assert sent == [{"type": SEND_MANY, "texts": ["ack", "state"]}]


async def test_a_consumer_sends_its_frames_one_by_one_where_the_server_does_not():
    sent: list = []
    await consumer_with(None, sent).send_texts(["ack", "state"])
    assert sent == [
        {"type": "websocket.send", "text": "ack"},
        {"type": "websocket.send", "text": "state"},
    ]


@pytest.mark.parametrize("extensions", [{SEND_MANY: {}}, None])
async def test_frames_sent_to_a_socket_that_is_gone_are_dropped_quietly(extensions):  # noqa: ANN001
    sent: list = []
    consumer = consumer_with(extensions, sent)

    async def gone(message: dict) -> None:
        sent.append(message)
        raise Disconnected("Attempt to send on a closed protocol")

    consumer.base_send = gone
    await consumer.send_texts(["ack", "state"])  # no exception
    await consumer.send_texts(["ack", "state"])
    assert len(sent) == 1 and consumer.closing


def test_unsent_bytes_reads_what_twisteds_tcp_transport_keeps_unsent():
    """The attribute names are Twisted's own: a release that renames them fails here."""

    class Reactor:
        def addWriter(self, writer: object) -> None:  # noqa: N802
            pass

    transport = FileDescriptor(Reactor())
    transport.connected = 1
    transport.write(b"x" * 10)
    transport.write(b"y" * 5)
    assert unsent_bytes(transport) == 15
    assert unsent_bytes(StringTransport()) == 0  # a transport that does not say: no limit


def test_a_client_that_stops_reading_is_dropped_past_the_send_buffer_limit(monkeypatch):  # noqa: ANN001
    monkeypatch.setattr(ProjectWebSocketProtocol, "send_buffer_limit", 10_000)
    protocol, transport = open_protocol(UnreadTransport())
    frame = "x" * 1000
    sent = 0
    while not transport.aborted and sent < 100:
        protocol.send_texts([frame])
        sent += 1
    assert transport.aborted and sent == 10  # the first write past 10,000 bytes
    assert protocol.state == protocol.STATE_CLOSED
    with pytest.raises(Disconnected):  # what follows is dropped by the consumer (closing)
        protocol.send_texts([frame])
    assert len(transport.value()) < 10_000 + 1010


def test_a_client_that_reads_is_never_dropped(monkeypatch):  # noqa: ANN001
    monkeypatch.setattr(ProjectWebSocketProtocol, "send_buffer_limit", 10_000)
    protocol, transport = open_protocol(UnreadTransport())
    for _ in range(100):
        protocol.sendMessage(b"x" * 1000)  # autobahn's own path writes through sendData too
        transport.clear()  # the kernel took it all
    assert not transport.aborted and protocol.state == protocol.STATE_OPEN


def test_a_close_frame_that_crosses_the_limit_closes_as_a_close_does(monkeypatch):  # noqa: ANN001
    """Dropped mid-close, autobahn settled the close twice and never told the consumer."""
    monkeypatch.setattr(ProjectWebSocketProtocol, "send_buffer_limit", 1000)
    protocol, transport = open_protocol(UnreadTransport())
    protocol.send_texts(["x" * 995])  # 997 bytes waiting: under the limit
    assert not transport.aborted
    protocol.sendClose(4429)  # its 4 bytes cross it
    assert not transport.aborted and protocol.state == protocol.STATE_CLOSING


def test_the_server_imports_before_django_is_set_up():
    """server.worker imports this module before daphne loads the application, and so before
    Django's settings are configured: an import that reads a setting (a middleware module,
    via DRF) stopped `make run` at start."""
    run = run_python("import server.daphne_server")
    assert run.returncode == 0, run.stderr


def flooded_protocol(
    monkeypatch,
    frames: int = 16,
    size: int = 0,  # noqa: ANN001
) -> tuple[ProjectWebSocketProtocol, StringTransport, asyncio.Queue]:
    monkeypatch.setattr(ProjectWebSocketProtocol, "max_waiting_frames", frames)
    monkeypatch.setattr(ProjectWebSocketProtocol, "max_waiting_bytes", size)
    protocol, transport = open_protocol()
    protocol.application_queue = queue = asyncio.Queue()
    protocol.muted = False
    protocol.client_addr = ("127.0.0.1", 1)
    return protocol, transport, queue


def close_code(data: bytes) -> int | None:
    closes = [f for f in parse_frames(data) if f.opcode == Opcode.CLOSE]
    return int.from_bytes(closes[0].data[:2], "big") if closes else None


def test_a_client_far_ahead_of_its_answers_is_closed_and_its_backlog_dropped(monkeypatch):  # noqa: ANN001
    protocol, transport, queue = flooded_protocol(monkeypatch, frames=16)
    for _ in range(15):
        protocol.onMessage(b'{"t":"ping"}', False)
    assert queue.qsize() == 15 and close_code(transport.value()) is None
    protocol.onMessage(b'{"t":"ping"}', False)  # the 16th waiting: still queued
    protocol.onMessage(b'{"t":"move"}', False)  # one more with 16 waiting: closed
    assert close_code(transport.value()) == 4429
    assert queue.empty()  # dropped: none of it is played
    protocol.onMessage(b'{"t":"move"}', False)
    assert queue.empty()


def test_frames_waiting_are_bounded_in_bytes_too(monkeypatch):  # noqa: ANN001
    protocol, transport, queue = flooded_protocol(monkeypatch, frames=0, size=100_000)
    for _ in range(8):
        protocol.onMessage(b"x" * 20_000, False)
    assert close_code(transport.value()) is None and queue.qsize() == 8
    protocol.onMessage(b"x" * 20_000, False)  # 160 kB waiting: past the limit
    assert close_code(transport.value()) == 4429 and queue.empty()


def test_a_client_that_waits_for_its_answers_is_never_closed(monkeypatch):  # noqa: ANN001
    protocol, transport, queue = flooded_protocol(monkeypatch, frames=16, size=1000)
    for _ in range(1000):
        protocol.onMessage(b"x" * 900, False)
        queue.get_nowait()  # handled before the next arrives
    assert close_code(transport.value()) is None and not protocol.flooded


def test_pings_past_the_rate_go_unanswered(monkeypatch):  # noqa: ANN001
    monkeypatch.setattr(ProjectWebSocketProtocol, "ping_rate", 1.0)
    monkeypatch.setattr(ProjectWebSocketProtocol, "ping_burst", 5.0)
    protocol, transport = open_protocol()
    for _ in range(50):
        protocol.onPing(b"p")
    pongs = [f for f in parse_frames(transport.value()) if f.opcode == Opcode.PONG]
    assert len(pongs) == 5


@pytest.mark.parametrize(
    ("code", "phrase"), [(429, b"Too Many Requests"), (200, b"OK"), (599, b"Unknown Status")]
)
def test_a_response_has_its_reason_phrase(code: int, phrase: bytes):
    from twisted.web import http
    from twisted.web.test.requesthelper import DummyChannel

    from server.daphne_server import ProjectWebRequest

    channel = DummyChannel()
    channel.factory = None  # daphne's request reads its server from the channel's factory
    request = ProjectWebRequest.__new__(ProjectWebRequest)
    http.Request.__init__(request, channel)
    request.setResponseCode(code)
    assert request.code_message == phrase
