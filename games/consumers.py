"""WebSocket consumers: parse the frame, check who is asking, call a service; nothing else.

What they ask of the database, and on which thread, is in games.socket_calls. A move or an
undo joins the process's batch (games.move_batcher): the service applies every waiting one in
one transaction, and the frames are built in the same call. The mover hears `ack` and `state`
on its own socket once its batch has committed; other sockets of the game hear through the
channel layer group, so a watcher on another server process sees the move too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any

import orjson
from django.conf import settings

from games import services, socket_calls
from games.broadcast import PLAYING, encode, fan_out, game_group, stage, state_order
from games.move_batcher import MoveBatcher
from games.services import MAX_VERSION
from server.errors import AppError, log_failure
from server.json_input import DuplicateKey, check_unique_keys
from server.lean_consumer import CLOSE_ABUSE, TOO_MANY_REFUSED, LeanWebsocketConsumer, TokenBucket

log = logging.getLogger(__name__)

CLOSE_NO_SUCH_PATH = 4404

# The error codes PROTOCOL.md promises on the socket; anything else is mapped onto them.
WS_CODES = {
    "bad_message",
    "illegal_move",
    "stale_version",
    "game_over",
    "forbidden",
    "rate_limited",
}
# A socket that can serve nothing says `forbidden`, and why in `reason` (refuse_socket).
WS_CODE_MAP = {"invalid": "bad_message", "not_found": "forbidden", "unavailable": "forbidden"}


class RateLimiter:
    """Token bucket per socket, plus a count of refusals that marks a client as abusive.

    Only pipelined frames are charged (sent before the socket's earlier frames were answered;
    LeanWebsocketConsumer.pipelined): a client that waits for each answer cannot flood the
    server, however fast it plays, and a bot replaying a 150-move line must not be refused
    halfway. A burst of a few dozen pipelined frames is fine (moves queued by a fast player, a
    reconnect sync); a client that keeps sending past the limit gets `rate_limited` errors, and
    after `abuse_limit` refusals within `abuse_window` seconds the socket is closed with 4429.
    """

    def __init__(self) -> None:
        self.bucket = TokenBucket(float(settings.WS_RATE_PER_SECOND), float(settings.WS_RATE_BURST))
        self.refusals: deque[float] = deque()
        self.abuse_limit = int(settings.WS_ABUSE_REFUSALS)
        self.abuse_window = 10.0

    def allow(self) -> bool:
        if self.bucket.take():
            return True
        now = time.monotonic()
        self.refusals.append(now)
        while self.refusals and now - self.refusals[0] > self.abuse_window:
            self.refusals.popleft()
        return False

    @property
    def abusive(self) -> bool:
        return len(self.refusals) >= self.abuse_limit


class JsonFrameConsumer(LeanWebsocketConsumer):
    """Shared plumbing: auth at connect, frame size and rate limits, `{"t", "d"}` parsing."""

    async def connect(self) -> None:
        if not await self.admit():
            return
        self.user = self.scope.get("user")
        self.limiter = RateLimiter()
        self.max_frame = settings.MAX_WS_FRAME_BYTES
        await self.on_connect()

    async def on_connect(self) -> None:
        raise NotImplementedError

    async def subscribe(self, group: str) -> None:
        """Join the group that fans out this socket's updates (left again at disconnect)."""
        self.group = group
        await self.channel_layer.group_add(group, self.channel_name)

    async def unsubscribe(self) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)
            del self.group

    # Why this socket serves nothing (no such game or board, or one not open to this user
    # yet), or None once it does.
    refusal: AppError | None = None

    async def refuse_socket(self, error: AppError, msg_id: Any = None) -> None:
        """Say why this socket serves nothing, and keep it open: PROTOCOL.md closes a socket
        for an error only when its sign-in fails (4401) or it is abused (4429). A client that
        knows only the contract would take any other close for a lost connection and open the
        socket again, and again; here it hears why, and a `sync` asks once more (the game may
        be open to it by then). `reason` is the REST error code for the same request."""
        self.refusal = error
        await self.unsubscribe()  # hears nothing of what it may not see
        await self.send_error(error.code, error.detail, msg_id, reason=error.code)

    async def sync_failed(self, error: AppError, data: dict) -> None:
        """A `sync` that could not be answered (the database gone for a moment, the game
        deleted) hears why, as the one at connect would; before, it heard nothing and its
        client waited for good. The socket keeps what it has, its group too: a sync may ask
        again."""
        await self.send_error(error.code, error.detail, _msg_id(data), reason=error.code)

    async def disconnect(self, code: int) -> None:
        await self.unsubscribe()
        await super().disconnect(code)

    async def send_frame(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=encode(frame))

    async def send_error(self, code: str, detail: str, msg_id: Any = None, **extra: Any) -> None:
        code = code if code in WS_CODES else WS_CODE_MAP.get(code, "bad_message")
        await self.send_frame(
            {"t": "error", "d": {"id": msg_id, "code": code, "detail": detail, **extra}}
        )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.closing or not hasattr(self, "limiter"):
            return  # closed at connect, or since (4429): frames still queued are dropped
        if self.pipelined() and not self.limiter.allow():
            if self.limiter.abusive:
                await self.close(code=CLOSE_ABUSE, reason=TOO_MANY_REFUSED)
            else:
                await self.send_error(
                    "rate_limited", "Too many messages: slow down.", _frame_id(text_data)
                )
            return
        if text_data is None:
            await self.send_error("bad_message", "Frames are JSON text, not binary.")
            return
        if _too_large(text_data, self.max_frame):
            await self.send_error("bad_message", f"Frame too large (limit {self.max_frame} bytes).")
            return
        try:
            frame = orjson.loads(text_data)
        except ValueError as exc:  # orjson.JSONDecodeError is one; it says where and why
            await self.send_error("bad_message", f"Frames must be JSON objects: {exc}.")
            return
        if not isinstance(frame, dict):
            await self.send_error("bad_message", 'A frame is a JSON object {"t": TYPE, "d": DATA}.')
            return
        data = frame.get("d", {})
        if data is None:
            data = {}
        if not isinstance(data, dict):
            await self.send_error("bad_message", '"d" must be an object.')
            return
        if not isinstance(frame.get("t"), str):
            # Answered by its id, like any other refusal of a frame that names one.
            await self.send_error("bad_message", _type_refusal(frame), _msg_id(data))
            return
        try:
            check_unique_keys(text_data, len(frame) + len(data))
        except DuplicateKey as exc:
            await self.send_error(
                "bad_message", f"A frame names each key once: {exc}.", _msg_id(data)
            )
            return
        handler = (
            getattr(self, f"on_{frame['t']}", None) if frame["t"] in self.frame_types else None
        )
        if handler is None:
            await self.send_error(
                "bad_message",
                f"Unknown message type '{frame['t'][:32]}'. Known: {', '.join(self.frame_types)}.",
                _msg_id(data),
            )
            return
        await handler(data)

    frame_types: tuple[str, ...] = ("ping",)

    async def on_sync(self, data: dict) -> None:
        """A `sync` is a database read, and a client that waits for each answer is never held
        by the socket's own rate: a user's sockets may have WS_SYNCS_AT_ONCE being answered at
        once (UserSockets); one more gets `rate_limited`."""
        if not self.sync_started():
            return await self.send_error(
                "rate_limited",
                f"Too many syncs at once: at most {settings.WS_SYNCS_AT_ONCE} for all your "
                "sockets; wait for their answers.",
                _msg_id(data),
            )
        try:
            await self.sync(data)
        finally:
            self.sync_ended()

    async def sync(self, data: dict) -> None:
        raise NotImplementedError

    async def on_ping(self, data: dict) -> None:
        await self.send_frame({"t": "pong"})


class NoSuchSocket(JsonFrameConsumer):
    """Any path no other socket serves (`/ws/games/abc`, a typo): not a socket of PROTOCOL.md,
    so there is nothing to keep open. An error frame says so, then a close with 4404, a code a
    client can act on, instead of a handshake that fails with HTTP 500 because no route
    matched."""

    async def connect(self) -> None:
        await self.accept()  # a close before accept would be an HTTP 403, losing the code
        await self.send_error("bad_message", "No such WebSocket path.", reason="bad_message")
        await self.close(code=CLOSE_NO_SUCH_PATH)


_ARTICLE = {"move": "A", "undo": "An"}
# What a write hears when the database failed it (gone for a moment), even played again on its
# own: an error like any other, not a socket closed with 1011 (PROTOCOL.md: an error never
# closes the socket). Whether it landed is not known here, so the client is told to sync.
_UNWRITTEN = (
    "The server could not save your {action} just now, and cannot tell whether it was played: "
    "sync to see where the game stands."
)
_ID_TYPES = (str, int)  # a tuple made once: `str | int` builds a union on every call


def _is_id(value: Any) -> bool:
    return value is None or (
        isinstance(value, _ID_TYPES) and not isinstance(value, bool) and len(str(value)) <= 64
    )


def _msg_id(data: dict) -> Any:
    """A frame's `id`, to answer it by, if it is one a client may use."""
    return data.get("id") if _is_id(data.get("id")) else None


def _too_large(text: str, limit: int) -> bool:
    """Whether a frame is over `limit` bytes on the wire: its UTF-8 length, not its count of
    characters (a '€' is three bytes). A frame of at most a quarter of the limit in characters
    is within it whatever they are, so only a long one is encoded to be measured."""
    return len(text) > limit >> 2 and len(text.encode("utf-8", "surrogatepass")) > limit


def _quoted(value: Any) -> str:
    """A value a refusal quotes, as JSON, cut at 32 bytes (a character the cut splits is
    replaced, not a UnicodeDecodeError that would close the socket)."""
    return orjson.dumps(value)[:32].decode(errors="replace")


def _type_refusal(frame: dict) -> str:
    """Why a frame's `t` is not a message type: missing, or not a string."""
    if "t" not in frame:
        return 'A frame needs "t", its message type: {"t": TYPE, "d": DATA}.'
    return f'"t" is a message type, a string, not {_quoted(frame["t"])}.'


def _version_refusal(action: str, data: dict) -> str:
    """Why a move or undo frame's `v` is not one: missing, or not a version (a number too
    large for 64 bits is read as a fraction, so it is said to be one, not missing)."""
    needs = f'{_ARTICLE[action]} {action} frame needs "v": the version you saw'
    if "v" not in data:
        return f"{needs}."
    v = data["v"]
    too_large = isinstance(v, float) and abs(v) > MAX_VERSION  # sent as a whole number, maybe
    sent = "a number that large" if too_large else _quoted(v)
    return f"{needs}, a whole number from 0 to {MAX_VERSION}, not {sent}."


def _move_refusal(data: dict) -> str:
    """Why a move frame's `move` is not one: missing, or not a string."""
    needs = 'A move frame needs "d": {"move": "t3-f0", "v": N}'
    if "move" not in data:
        return f"{needs}."
    return f'{needs}: "move" is a string, not {_quoted(data["move"])}.'


def _order(event: dict) -> tuple[int, int]:
    """Where a state fanned out to a game's group stands in the game's history (state_order)."""
    return state_order(event["v"], event.get("stage", PLAYING))


def _frame_id(text_data: str | None) -> Any:
    """The `id` of a frame refused before it was read (rate_limited), so the client can tell
    which of its messages was dropped; None if the frame has no usable one."""
    if text_data is None or _too_large(text_data, settings.MAX_WS_FRAME_BYTES):
        return None
    try:
        data = orjson.loads(text_data).get("d")
        msg_id = data.get("id")
    except (ValueError, AttributeError):  # not JSON, or not {"d": {...}}
        return None
    return msg_id if _is_id(msg_id) else None


class GameConsumer(JsonFrameConsumer):
    """`/ws/games/{id}`: the owner plays, other signed-in users watch."""

    frame_types = ("move", "undo", "resign", "sync", "ping")
    batcher: MoveBatcher | None = None  # the loop's, looked up at this socket's first move
    stage = PLAYING  # the stage of the last state this socket was sent (broadcast.stage)

    async def on_connect(self) -> None:
        self.game_id = int(self.scope["url_route"]["kwargs"]["game_id"])
        # States that came ahead of one still on its way, each with the frames after it.
        self.held: list[list[dict]] = []
        await self.load()

    async def load(self, msg_id: Any = None) -> None:
        """Join the game's group *before* loading the state to start from: a move committed
        after that load reaches this socket through the group, one committed before is in the
        state, so none falls in between (server.channel_layer.RedisLayer relies on it). No
        such game, or one this user may not watch yet: refused (`refuse_socket`)."""
        await self.subscribe(game_group(self.game_id))
        loaded = await socket_calls.on_thread(socket_calls.load_state)(self.game_id, self.user)
        if isinstance(loaded, AppError):
            return await self.refuse_socket(loaded, msg_id)
        owner_id, self.version, frame = loaded
        self.stage = stage(frame)
        self.is_owner = owner_id == self.user.id
        self.refusal = None
        await self.send_frame(frame)

    async def game_frame(self, event: dict) -> None:
        """A frame fanned out to the game's group (skipping the socket that already has it).
        A socket refused at connect was in the group for a moment: it hears nothing.

        States go out in the game's order, each once. Every change adds one to the version (a
        resign ends the game at its version), so a state more than one ahead of this socket's
        came before one still on its way: two writers' frames can arrive in either order
        (moves made on two server processes, one fanned out through Redis and the other
        straight to this process's sockets; two batches committing back to back). It waits
        for the missing one, with what came after it, for at most `gap_wait` seconds: one that
        never comes (the layer dropped it) holds nothing back longer, and the later state has
        the whole position. A state this socket already has, or an older one, is dropped: a
        move committed while the socket loaded its first state (or a `sync`'s) is in that
        state and fans out to it as well, and was sent again, once even after the answer to a
        later `sync`. A resign, or the day's end, keeps the version, but its state stands after
        the one still playing (state_order), so it is never taken for a copy."""
        if event.get("exclude") == self.channel_name or self.refusal is not None:
            return
        if event["t"] != "state":
            if self.held:  # it follows the state held last (a game's result, its last state)
                self.held[-1].append(event)
            else:
                await self.send(text_data=event["text"])
            return
        if not self._newer(event):
            return
        if not self.held and event["v"] <= self.version + 1:
            self.version, self.stage = event["v"], event.get("stage", PLAYING)
            return await self.send(text_data=event["text"])
        self.held.append([event])
        self.held.sort(key=lambda group: _order(group[0]))
        await self.release_held()

    # How long a state ahead of a missing one waits for it (game_frame): a quarter of a second
    # let a mover's process that stalled between answering and fanning out (an audit stopped it
    # for 0.6 s) have its state dropped as late, when its mover's next move, made through
    # another process, reached a watcher first. A state lost outright (which a healthy layer
    # does not do) holds the ones after it this long.
    gap_wait = 1.0
    _gap_timer: asyncio.TimerHandle | None = None

    def _newer(self, event: dict) -> bool:
        return _order(event) > state_order(self.version, self.stage)

    async def release_held(self, everything: bool = False) -> None:
        """Send the held states that follow on from this socket's version (all of them, in
        order, once the wait is over), each with the frames that came after it; drop any that
        this socket has by now, or an older one. The wait starts when a state is first held
        and is not drawn out by later ones."""
        texts = []
        while self.held and (everything or self.held[0][0]["v"] <= self.version + 1):
            state, *after = self.held.pop(0)
            if self._newer(state):
                self.version, self.stage = state["v"], state.get("stage", PLAYING)
                texts.append(state["text"])
            texts.extend(frame["text"] for frame in after)
        if not self.held and self._gap_timer is not None:
            self._gap_timer.cancel()
            self._gap_timer = None
        elif self.held and self._gap_timer is None:
            self._gap_timer = self.post_later(self.gap_wait, {"type": "game.gap_over"})
        if texts:
            await self.send_texts(texts)

    async def game_gap_over(self, event: dict) -> None:
        self._gap_timer = None
        if self.refusal is None:
            await self.release_held(everything=True)

    async def disconnect(self, code: int) -> None:
        if self._gap_timer is not None:
            self._gap_timer.cancel()
        await super().disconnect(code)

    async def sync(self, data: dict) -> None:
        if self.refusal is not None:
            return await self.load(_msg_id(data))  # refused at connect: ask again
        loaded = await socket_calls.on_thread(socket_calls.load_state)(self.game_id, self.user)
        if isinstance(loaded, AppError):
            await self.sync_failed(loaded, data)
        else:
            _, v, frame = loaded
            await self._show_loaded(v, frame)

    async def _show_loaded(self, v: int, frame: dict) -> None:
        """Send a state read from the database as where this socket stands, then the held
        states that follow on from it."""
        self.version, self.stage = v, stage(frame)
        await self.send_frame(frame)
        if self.held:
            await self.release_held()

    async def layer_reconnected(self, event: dict) -> None:
        """The channel layer is back after an outage: the states fanned out meanwhile never
        came, so send the game as it stands if it is newer than what this socket has."""
        if self.refusal is not None or not hasattr(self, "version"):
            return
        loaded = await socket_calls.on_thread(socket_calls.load_state)(self.game_id, self.user)
        if isinstance(loaded, AppError):
            return
        _, v, frame = loaded
        if state_order(v, stage(frame)) > state_order(self.version, self.stage):
            await self._show_loaded(v, frame)

    async def on_move(self, data: dict) -> None:
        move = data.get("move")
        if not isinstance(move, str):
            return await self._refuse(data, "bad_message", _move_refusal(data))
        await self._write("move", data)

    async def on_undo(self, data: dict) -> None:
        await self._write("undo", data)

    async def on_resign(self, data: dict) -> None:
        await self._write("resign", data)

    async def send_error(self, code: str, detail: str, msg_id: Any = None, **extra: Any) -> None:
        """Every error on a game socket carries the version the server knows is current."""
        if hasattr(self, "version"):
            extra.setdefault("v", self.version)
        await super().send_error(code, detail, msg_id, **extra)

    async def _refuse(self, data: dict, code: str, detail: str, **extra: Any) -> None:
        await self.send_error(code, detail, _msg_id(data), **extra)

    async def _write(self, action: str, data: dict) -> None:
        if self.refusal is not None:
            return await self.refuse_socket(self.refusal, _msg_id(data))
        if not _is_id(data.get("id")):
            return await self._refuse(
                data, "bad_message", '"id" must be a short string or an integer.'
            )
        if action != "resign":
            v = data.get("v")
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_VERSION:
                return await self._refuse(data, "bad_message", _version_refusal(action, data))
        if not self.is_owner:
            return await self._refuse(data, "forbidden", "You are watching: only the owner plays.")
        try:
            if action == "resign":
                resign = socket_calls.on_thread(socket_calls.resign)
                result = await resign(self.game_id, self.user)
            else:  # a move or an undo, in the process's next batch
                move = data["move"] if action == "move" else services.UNDO_REQUEST
                request = services.MoveRequest(self.game_id, self.user, move, data["v"])
                batcher = self.batcher
                if batcher is None:
                    batcher = self.batcher = socket_calls.move_batcher()
                result = await batcher.submit(request)
        except AppError as exc:
            result = exc
        except Exception as exc:  # noqa: BLE001 - logged; the socket hears why and stays
            away = "Socket writes (moves, undos, resigns)"
            log_failure(log, exc, away, "Game %s: a %s could not be written", self.game_id, action)
            result = AppError("unavailable", _UNWRITTEN.format(action=action), reason="unavailable")
        if isinstance(result, AppError):
            # The error names the current version, but this socket has not been sent that
            # state: its version stays, so the states in between still reach it from the group.
            return await self._refuse(data, result.code, result.detail, **result.extra)
        # The state, then the result if the game ended (events.frames_for). Nothing from the
        # group reached this socket meanwhile: a consumer handles one message at a time.
        self.version, frames = result
        self.stage = frames[0].stage
        ack = encode({"t": "ack", "d": {"id": data.get("id")}})
        await self.send_texts([ack, *[frame.text for frame in frames]])
        if self.held:
            await self.release_held()
        # The mover first, then the game's other sockets. The other way round, a mover who
        # plays on at once through another process could never have its next state reach a
        # watcher ahead of this one; but with Redis every move's answer then waited for the
        # group send's round trip, and two workers made 6-10 % fewer moves a second
        # (docs/performance.md, "Session 65"). A state that comes late is waited for
        # (`gap_wait`), long enough for any stall short of a second.
        await fan_out(self.game_id, frames, exclude=self.channel_name)


class LeaderboardConsumer(JsonFrameConsumer):
    """`/ws/leaderboards/{date}/{variant}`: the board on connect and whenever it changes.
    Public, as `GET /api/daily/{date}/{variant}/leaderboard` is."""

    frame_types = ("sync", "ping")
    public = True

    total = -1  # entries on the largest board sent (a board only gains them)

    async def on_connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        self.date, self.variant = kwargs["date"], kwargs["variant"]
        await self.load()

    async def load(self, msg_id: Any = None) -> None:
        """Join the board's group *before* loading the board, as the game socket does: a
        finish committed after the load reaches this socket through the group, one committed
        before is in the board, so none falls in between. A date or variant that is not one,
        or a day with no challenge: refused (`refuse_socket`); the first before any group is
        named by it (a group name takes only some characters, and so many)."""
        from games import leaderboards

        try:
            day = socket_calls.board_day(self.date, self.variant)
        except AppError as exc:
            return await self.refuse_socket(exc, msg_id)
        # The group is named by the day as the board's pushes name it (YYYY-MM-DD).
        await self.subscribe(leaderboards.board_group(day.isoformat(), self.variant))
        frame = await socket_calls.board_call(socket_calls.load_board)(self.date, self.variant)
        if isinstance(frame, AppError):
            return await self.refuse_socket(frame, msg_id)
        self.refusal = None
        await self.show(frame)

    async def board_frame(self, event: dict) -> None:
        """A board some writer read after its attempt finished. Two writers can read theirs in
        one order and deliver them in the other; a board only gains entries as it is played
        (an attempt finishes once; the day's end adds the open ones), so one with fewer
        entries than the board this socket has is older, and is dropped rather than shown
        over a newer one; unless it says it `shrunk` (attempts deleted: games.signals), when
        it is the board from now on. A refused socket shows none (one pushed while it loaded
        waited for the load)."""
        shrunk = event.get("shrunk", False)
        if self.refusal is None and (shrunk or event["frame"]["d"]["total"] >= self.total):
            if shrunk:
                self.total = -1
            await self.show(event["frame"])

    async def sync(self, data: dict) -> None:
        if self.refusal is not None:
            return await self.load(_msg_id(data))  # refused at connect: ask again
        frame = await socket_calls.board_call(socket_calls.load_board)(self.date, self.variant)
        if isinstance(frame, AppError):
            await self.sync_failed(frame, data)
        else:
            await self.show(frame)

    async def layer_reconnected(self, event: dict) -> None:
        """The channel layer is back after an outage: boards pushed meanwhile never came."""
        if self.refusal is None:
            frame = await socket_calls.board_call(socket_calls.load_board)(self.date, self.variant)
            if not isinstance(frame, AppError) and frame["d"]["total"] >= self.total:
                await self.show(frame)

    async def show(self, frame: dict) -> None:
        """Send a board, read from the database or pushed, and remember its size."""
        self.total = max(self.total, frame["d"]["total"])
        await self.send_frame(frame)
