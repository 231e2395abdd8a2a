"""The consumer base every socket of this project uses, the bench's echo included."""

from __future__ import annotations

import asyncio
import logging
import time

from autobahn.exception import Disconnected
from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch
from django.conf import settings

from server.channel_layer import put_dropping_oldest
from server.ws_subprotocol import chosen_subprotocol

log = logging.getLogger(__name__)

SEND_MANY = "websocket.send_many"  # the ASGI extension server.daphne_server offers
# The close code for abuse (PROTOCOL.md): a flood of frames, a frame over the read limit, or one
# socket more than a user may open.
CLOSE_ABUSE = 4429
# The close code every socket uses when its handshake carried no valid sign-in, or that sign-in
# has ended (PROTOCOL.md).
CLOSE_UNAUTHENTICATED = 4401
# The reasons that go with them, so a client's log says why without the docs at hand.
NOT_SIGNED_IN = "Not signed in, or the sign-in has ended: sign in again."
TOO_MANY_REFUSED = "Too many frames refused for their rate: slow down."
# A handshake whose sign-in could not be checked (the database away): RFC 6455's "try again
# later", which a client reconnects after, as from a lost connection.
CLOSE_TRY_AGAIN = 1013
SIGN_IN_UNKNOWN = "Your sign-in could not be checked just now: connect again in a moment."
# What daphne closes a socket with when its consumer raised (RFC 6455's "internal error").
CLOSE_SERVER_ERROR = 1011


class TokenBucket:
    """`rate` takes a second, up to `burst` saved up."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


class UserSockets:
    """What one user's sockets in this process share. Every limit of a socket is its own, so
    one account with many sockets was many clients: 2,000 that watched its game made each move
    of it 2,000 sends (6 moves/s), and 50 that each sent `sync` after `sync`, waiting for every
    answer as a client may, held 417 database reads a second (another player's move took
    118 ms). So a user may have WS_MAX_SOCKETS_PER_USER open, and WS_SYNCS_AT_ONCE syncs being
    answered at once: a client that waits for each answer is never held, however fast it
    syncs, and many sockets of one user take a few of the threads, not all. Kept while any of
    the user's sockets is open."""

    __slots__ = ("user_id", "open", "syncing")

    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.open = 0
        self.syncing = 0


_users: dict[int, UserSockets] = {}


class LeanWebsocketConsumer(AsyncWebsocketConsumer):
    """Channels' WebSocket consumer, minus its per-message `aclose_old_connections()`, and
    quiet once its socket is closing.

    Channels runs `close_old_connections` on a worker thread before every message: a thread
    hop on every frame, even a ping or a fanned-out state. Here the database is reached only
    through `database_sync_to_async`, which closes stale connections itself, in the thread
    that uses them. The echo consumer (the bench's ceiling) shares this base, so the game
    socket is measured against a socket with the same plumbing, not a slower one.

    A send on a socket that has gone (the client dropped it mid-move, or the server closed it
    with 4429) raised autobahn's `Disconnected` into the consumer, which died before its
    `disconnect()` ran: its channel stayed in the game's group (a day, on Redis), and every
    later move fanned out to it. Such a send is now dropped; so are frames that were still
    queued when the server closed the socket (`closing`, see JsonFrameConsumer.receive).
    """

    closing = False
    # Whether a handshake with no credential may open it, as its REST twin may be read without
    # one (a leaderboard).
    public = False
    # The queue the server fills with this socket's frames, where it exposes one (daphne's
    # `receive` is an asyncio.Queue's get, as is Channels' test communicator's); see `pipelined`.
    inbound: asyncio.Queue | None = None
    # The queue this process's group sends fill for this socket, where the layer keeps one.
    inbox: asyncio.Queue | None = None

    async def __call__(self, scope: dict, receive, send) -> None:  # noqa: ANN001
        """As channels' own, except where the layer keeps an inbox per channel
        (server.channel_layer.RedisLayer): then that inbox is read, not the layer's `receive`.

        A handler that raised (a database gone mid-read, say) ended the consumer without its
        `websocket.disconnect`: daphne closes such a socket with 1011, but its user's count of
        open sockets kept it for good (after WS_MAX_SOCKETS_PER_USER reconnects during an
        outage, every new socket of that user was refused with 4429 until a restart), and its
        channel stayed in its groups. So what a disconnect undoes is undone here too."""
        try:
            await self._serve(scope, receive, send)
        finally:
            if not self.disconnected:
                await self._undo_connect()

    async def _serve(self, scope: dict, receive, send) -> None:  # noqa: ANN001
        queue = getattr(receive, "__self__", None)
        if isinstance(queue, asyncio.Queue):
            self.inbound = queue
        layer = get_channel_layer(self.channel_layer_alias)
        if not hasattr(layer, "open_inbox"):
            return await super().__call__(scope, receive, send)
        self.scope = scope
        self.channel_layer = layer
        self.channel_name = await layer.new_channel()
        self.base_send = send
        inbox = self.inbox = layer.open_inbox(self.channel_name)
        try:
            await await_many_dispatch([receive, inbox.get], self.dispatch)
        except StopConsumer:
            pass
        finally:
            layer.close_inbox(self.channel_name)

    async def _undo_connect(self) -> None:
        self.closing = True
        self.uncount_socket()
        if getattr(self, "channel_layer", None) is None:
            return  # ended before it was set up: nothing joined
        try:
            await self.disconnect(CLOSE_SERVER_ERROR)
        except Exception:  # noqa: BLE001 - the first error is the one daphne logs
            log.warning("a crashed socket's groups were not all left", exc_info=True)

    def post_later(self, delay: float, message: dict) -> asyncio.TimerHandle:
        """Hand `message` to this consumer's own `dispatch` after `delay` seconds, in turn with
        the frames and group messages it hears: a handler run from a timer instead would
        interleave its sends with the one running. Cancel the handle when it is no longer
        wanted; one that fires after the socket has gone reaches no one."""
        return asyncio.get_running_loop().call_later(delay, self._post, message)

    def _post(self, message: dict) -> None:
        if self.inbox is not None:
            put_dropping_oldest(self.inbox, message)
        else:
            asyncio.ensure_future(self.channel_layer.send(self.channel_name, message))

    def pipelined(self) -> bool:
        """Whether the client sent more frames before this one was answered.

        Channels hands a consumer one message at a time and takes the next only once this one
        is handled, so while a frame is being handled, the frames the client sent after it wait
        in `inbound`. A client that waits for each answer before sending its next frame never
        has one waiting, however fast it plays; a flood always has. Where the server exposes
        no queue, every frame counts as pipelined.
        """
        return self.inbound is None or not self.inbound.empty()

    # Messages the sockets of this process are handling now, all of them: a stopping server
    # waits for none to be left before it closes them (server.daphne_server.close_sockets).
    handling = 0

    async def dispatch(self, message: dict) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        LeanWebsocketConsumer.handling += 1
        try:
            await handler(message)
        finally:
            LeanWebsocketConsumer.handling -= 1

    async def send(
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False
    ) -> None:
        if self.closing:
            return
        try:
            await super().send(text_data, bytes_data, close)
        except Disconnected:
            self.closing = True  # the peer is gone: its websocket.disconnect is on its way

    async def send_texts(self, texts: list[str]) -> None:
        """Send text frames in order: in one ASGI message where the server offers it (the
        `websocket.send_many` extension, server.daphne_server), else one by one."""
        if self.closing:
            return
        try:
            if SEND_MANY in self.scope.get("extensions", ()):
                await self.base_send({"type": SEND_MANY, "texts": texts})
            else:
                for text in texts:
                    await self.base_send({"type": "websocket.send", "text": text})
        except Disconnected:
            self.closing = True  # the peer is gone: its websocket.disconnect is on its way

    async def accept(self, subprotocol: str | None = None, headers: list | None = None) -> None:
        """Accept with the subprotocol the handshake's sign-in asks for (server.ws_subprotocol)."""
        await super().accept(subprotocol or chosen_subprotocol(self.scope), headers)

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        if self.closing:
            return
        self.closing = True
        await super().close(code, reason)

    async def admit(self) -> bool:
        """Accept the handshake, then keep the socket only if it may be open: signed in, or a
        `public` socket opened with no credential (a wrong token is refused all the same, as
        REST refuses it); else close with 4401. A signed-in socket joins the group of the
        session or token it signed in with, so signing out, or revoking the token, closes it
        with 4401 on whichever process holds it; and its user's group, so deactivating the user
        closes it too."""
        # Django's auth: imported once apps are ready
        from server.ws_auth import sign_in_group, sign_in_lasts, user_group

        # Accept before closing: a close before accept is an HTTP 403 and the 4401 would be lost.
        await self.accept()
        if self.scope.get("sign_in_unknown"):
            await self.close(code=CLOSE_TRY_AGAIN, reason=SIGN_IN_UNKNOWN)
            return False
        user = self.scope.get("user")
        signed_in = user is not None and user.is_authenticated
        if not signed_in:
            if self.public and self.scope.get("auth_via") != "token":
                return True
            await self.close(code=CLOSE_UNAUTHENTICATED, reason=NOT_SIGNED_IN)
            return False
        if not self.count_socket(user.pk):
            log.warning("closed a socket of user %s with 4429: too many open", user.pk)
            await self.close(code=CLOSE_ABUSE, reason="Too many sockets open: close some first.")
            return False
        group = sign_in_group(self.scope)
        if group is not None:
            self.sign_in_group = group
            self.user_group = user_group(user.pk)
            # At once: each may wait for a Redis that hangs (RedisLayer.join_seconds).
            await asyncio.gather(
                self.channel_layer.group_add(group, self.channel_name),
                self.channel_layer.group_add(self.user_group, self.channel_name),
            )
            # A sign-out, a revoke or a deactivation that came between the handshake's look-up
            # and the joins told a group this socket was not in yet: only a second look tells.
            if not await sign_in_lasts(self.scope):
                await self.close(code=CLOSE_UNAUTHENTICATED, reason=NOT_SIGNED_IN)
                return False
        return True

    counted: UserSockets | None = None  # what this socket shares with its user's others

    def count_socket(self, user_id: int) -> bool:
        """Count this socket among its user's, if there is room (WS_MAX_SOCKETS_PER_USER)."""
        shared = _users.get(user_id)
        limit = settings.WS_MAX_SOCKETS_PER_USER
        if shared is not None and limit and shared.open >= limit:
            return False
        if shared is None:
            shared = _users[user_id] = UserSockets(user_id)
        shared.open += 1
        self.counted = shared
        return True

    def sync_started(self) -> bool:
        """Count one more `sync` being answered for this user, if there is room
        (UserSockets); `sync_ended` once it is answered."""
        shared = self.counted
        if shared is None:
            return True
        if shared.syncing >= settings.WS_SYNCS_AT_ONCE:
            return False
        shared.syncing += 1
        return True

    def sync_ended(self) -> None:
        shared = self.counted
        if shared is not None and shared.syncing > 0:
            shared.syncing -= 1

    def uncount_socket(self) -> None:
        shared, self.counted = self.counted, None
        if shared is not None:
            shared.open -= 1
            if shared.open <= 0 and _users.get(shared.user_id) is shared:
                del _users[shared.user_id]

    async def sign_in_ended(self, event: dict) -> None:
        """The session this socket signed in with has signed out, its token was revoked, or its
        user was deactivated."""
        await self.close(code=CLOSE_UNAUTHENTICATED, reason=NOT_SIGNED_IN)

    async def sign_in_moved(self, event: dict) -> None:
        """The session this socket signed in with signed in again, under a new key
        (server.ws_auth.session_key_changed): follow it, so its sign-out reaches this socket."""
        old = getattr(self, "sign_in_group", None)
        if old is None or self.closing:
            return
        self.sign_in_group = event["group"]
        await self.channel_layer.group_add(self.sign_in_group, self.channel_name)
        await self.channel_layer.group_discard(old, self.channel_name)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "sign_in_group"):
            await asyncio.gather(
                self.channel_layer.group_discard(self.sign_in_group, self.channel_name),
                self.channel_layer.group_discard(self.user_group, self.channel_name),
            )

    async def layer_reconnected(self, event: dict) -> None:
        """The channel layer was unreachable and is back (server.channel_layer.RedisLayer): this
        socket's groups are joined again; what it missed meanwhile is the subclass's to resend."""

    disconnected = False  # websocket_disconnect ran: what connect did is undone

    async def websocket_disconnect(self, message: dict) -> None:
        self.closing = True
        self.disconnected = True
        self.uncount_socket()
        await super().websocket_disconnect(message)
