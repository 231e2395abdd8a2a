// One game on screen: its socket, the table, the counters and the result.
//
// The server is the only judge. A move that is in `legal_moves` is shown at once (optimistic)
// and sent; any other move is sent as well and only shown if the server accepts it. One
// action is in flight at a time; later input waits in a queue and is checked against the
// fresh `legal_moves` when its turn comes. A refusal rolls the screen back to the server's
// state and shows the server's message; `stale_version` also asks for a `sync`. After a
// dropped socket the server's `state` on connect is the truth; a move that was in flight and
// did not land (the version did not move) is sent again with the same version, which the
// server can never apply twice.

import { applyMove, describeMove, describeUndo, parseMove, refusalMessage, topCards } from "./cards.js";
import { get, serverNow, signedOut } from "./api.js";
import { ReconnectingSocket } from "./socket.js";
import { Table } from "./table.js";
import { confirmDialog, gameTitle, h, formatSeconds, modalOpen, plural, statusText } from "./ui.js";

// Why a ranked attempt's Undo is greyed: after a draw or a play from Barricade A's stock, and
// after a move to a foundation (RULES.md C3), as the server refuses them there.
const UNDO_REVEALED = "No undo here: in a ranked attempt a move that turned a card up stands.";
const UNDO_FOUNDATION = "No undo here: in a ranked attempt a card on a foundation stays there.";
const toFoundation = (move) => typeof move === "string" && /-f\d+(:|$)/.test(move);
// An action of this page's: as a state's `last_move` names it, and as a message names it.
const actionString = (a) => (a.kind === "undo" ? "undo" : a.move);
const yourAction = (a) => (a.kind === "undo" ? "your undo" : "your move");
const movedOn = (a, when) => `Not played: the game moved on in another tab or on another device before ${yourAction(a)} ${when}.`;

const FLIGHT_TIMEOUT_MS = 10000;
const MESSAGE_MIN_MS = 600; // a message stays at least this long, whatever the player presses

export class GameView {
  constructor(root, { game, variant, me, readOnly = false, onFinished, onReopened, onMessage }) {
    this.root = root;
    this.game = game;
    this.variant = variant;
    this.me = me;
    this.readOnly = readOnly || !me || game.owner !== me.username;
    this.onFinished = onFinished || (() => {});
    this.onReopened = onReopened || (() => {});
    this.externalMessage = onMessage;
    this.server = { v: game.v, ...game.state };
    this.status = game.status;
    this.seconds = game.seconds;
    this.result = null;
    this.inflight = null;
    this.queue = [];
    this.seq = 0;
    this.freshConnection = false;
    this.build();
    this.table = new Table(this.tableEl, variant, {
      game: this.root,
      readOnly: this.readOnly,
      onMove: (move, info) => this.submit(move, info),
      onMessage: (text) => this.message(text, "info"),
    });
    this.render();
    this.tick = setInterval(() => {
      this.renderClock();
      this.renderConn();
    }, 1000);
    this._keys = (e) => this.keyDown(e);
    document.addEventListener("keydown", this._keys);
    this.socket = new ReconnectingSocket(`/ws/games/${game.id}`, {
      onframe: (f) => this.frame(f),
      onstatus: (s, info) => this.connStatus(s, info),
      onopen: () => {
        this.freshConnection = true;
        this.root.dataset.synced = "0";
      },
      onfatal: (code) => {
        if (code === 4401) signedOut();
        else this.message("This game cannot be opened.", "error");
      },
    });
    // Over, or a ranked attempt its day closed as it stood: the banner, with its replay.
    if (game.status !== "playing" || game.state.day_over) this.showFinished();
  }

  destroy() {
    if (this.asking) this.asking.cancel();
    clearInterval(this.tick);
    clearTimeout(this.flightTimer);
    document.removeEventListener("keydown", this._keys);
    this.socket.close();
    this.table.destroy();
  }

  // ---- layout ----------------------------------------------------------------------------

  build() {
    const g = this.game;
    this.movesEl = h("span", { class: "stat-value", "data-testid": "moves" }, "0");
    this.clockEl = h("span", { class: "stat-value", "data-testid": "clock" }, "0:00");
    this.connEl = h("span", { class: "conn", "data-testid": "conn", "data-state": "connecting" }, "connecting…");
    this.undoBtn = h("button", { type: "button", "data-testid": "undo", title: "Undo (u)" }, "Undo");
    this.resignBtn = h("button", { type: "button", class: "quiet", "data-testid": "resign" }, "Resign");
    this.undoBtn.addEventListener("click", () => this.undo());
    this.resignBtn.addEventListener("click", () => this.resign());
    // Hints are for practice games only (the server refuses them in a ranked attempt).
    this.hintBtn = g.daily && g.daily.ranked ? null
      : h("button", { type: "button", class: "quiet", "data-testid": "hint", title: "Hint (h)" }, "Hint");
    if (this.hintBtn) this.hintBtn.addEventListener("click", () => this.hint());
    this.msgEl = h("div", { class: "message", "data-testid": "message", role: "status", "aria-live": "polite" });
    // Each change of the table said in words, for a screen reader (not shown).
    this.announceEl = h("div", { class: "sr-only", "data-testid": "announce", "aria-live": "polite" });
    this.bannerEl = h("div", { class: "banner", "data-testid": "game-over", hidden: true });
    const who = this.readOnly
      ? h("span", { class: "tag watch", "data-testid": "watching" }, `Watching ${g.owner}`)
      : h("span", { class: "tag" }, g.daily && g.daily.ranked ? "Ranked attempt" : "Practice");
    const statusEl = h("span", { class: "stat" }, h("span", { class: "stat-label" }, "Status "),
      this.statusEl = h("span", { class: "stat-value", "data-testid": "status" }, ""));
    const bar = h("div", { class: "game-bar" },
      h("div", { class: "game-title" }, this.titleEl = h("h2", {}, ...gameTitle(g, this.variant)), who),
      h("div", { class: "stats" },
        h("span", { class: "stat" }, h("span", { class: "stat-label" }, "Moves "), this.movesEl),
        h("span", { class: "stat" }, h("span", { class: "stat-label" }, "Time "), this.clockEl),
        statusEl,
        this.connEl),
      this.readOnly ? h("div", { class: "actions" }) : h("div", { class: "actions" }, this.undoBtn, this.hintBtn, this.resignBtn),
    );
    this.tableEl = h("section", { class: "table", "aria-label": `${this.variant.name} table` });
    this.tableEl.addEventListener("pointerdown", () => this.messageRead());
    const help = this.helpEl = this.readOnly ? null : h("p", { class: "help" },
      "Drag a card, or click (tap) it and then its target; a double click (double tap) sends a card to a foundation.",
      h("span", { class: "keys" }, " Keyboard: Tab or arrows to a pile, Enter to pick and drop, Esc to cancel, f = to foundation, u = undo",
        this.variant.piles && this.variant.piles.waste ? ", d = draw" : "",
        this.hintBtn ? ", h = hint." : "."));
    this.root.replaceChildren(bar, this.msgEl, this.announceEl, this.bannerEl, this.tableEl, ...(help ? [help] : []));
    this.root.classList.add("game");
    this.root.dataset.gameId = String(g.id);
  }

  // ---- drawing ---------------------------------------------------------------------------

  // What the table shows: the server's state, with the player's actions still on their way
  // shown as played where they can be foreseen: the move in flight (or, with none in flight,
  // offline, the move waiting to be sent) if the server lists it as legal, then the moves
  // queued behind it, as the player made them (checked when their turn comes: pump). Not
  // past a draw, whose card is face down, or an undo. So a move made offline or while
  // another was on its way is seen to have been made, and is not made a second time.
  display() {
    let shown = this.server;
    const pending = [this.inflight, ...this.queue].filter(Boolean);
    for (const [i, action] of pending.entries()) {
      if (action.kind !== "move" || action.move === "draw" || action.overtaken) break;
      if (i === 0 && !(this.server.legal_moves || []).includes(action.move)) break;
      const next = applyMove(shown, action.move);
      if (!next) break;
      shown = next;
    }
    return shown;
  }

  // True if the cards the player had picked up are gone from where they were (Table.render).
  render(opts = {}) {
    const shown = this.display();
    const pickLost = this.table.render(shown, opts);
    this.movesEl.textContent = String(shown.moves ?? this.server.v);
    // A ranked attempt whose day ended counts as it stands: still "playing", but closed.
    this.statusEl.textContent = shown.day_over ? "Day over" : statusText(shown.status);
    this.statusEl.dataset.status = shown.status;
    this.root.dataset.v = String(this.server.v);
    this.root.dataset.pending = this.inflight || this.queue.length ? "1" : "0";
    const playing = shown.status === "playing" && !shown.day_over;
    // How to play, while there is play left: not under a game that has ended.
    if (this.helpEl) this.helpEl.hidden = !playing;
    if (!playing) this.dropHint(); // the game is over: no move to point at
    // Offline with an action waiting, nothing more is taken (enqueue): the button says so.
    const stands = this.lastMoveStands(shown);
    this.undoBtn.disabled = !(playing || this.reopenable(shown)) || !shown.moves || Boolean(stands) || this.waitingOffline();
    // A greyed button says why when the reason is the rules', not the game's state.
    this.undoRuled = playing ? stands : "";
    this.undoBtn.title = this.undoRuled || "Undo (u)";
    this.resignBtn.disabled = !playing;
    this.renderHint(shown);
    this.renderClock();
    return pickLost;
  }

  // Whether an undo takes this ended game back into play: a practice game that is stuck (the
  // server reopens it; a ranked attempt's ending stands, as does a win or a resignation).
  reopenable(shown = this.server) {
    return !this.readOnly && shown.status === "stuck" && !(this.game.daily && this.game.daily.ranked);
  }

  // Why a ranked attempt's last move stands, which the server will not undo ("" when it does
  // not): it turned a card up (a draw; a play from Barricade A's stock, whose next card then
  // shows), or it went to a foundation (C3). Judged on the move an undo would take back:
  // after an undo that is an earlier move, read from the history.
  lastMoveStands(shown) {
    if (!(this.game.daily && this.game.daily.ranked)) return "";
    const waiting = [this.inflight, ...this.queue].filter(Boolean);
    // A draw on its way is not drawn on the table (its card is face down), but the undo
    // would come after it.
    if (waiting.some((a) => a.kind === "move" && a.move === "draw")) return UNDO_REVEALED;
    const newest = waiting[waiting.length - 1];
    if (newest && newest.kind === "move" && toFoundation(newest.move)) return UNDO_FOUNDATION;
    const last = shown.last_move === "undo" ? this.undoneTo(shown.v) : shown.last_move;
    if (last === "draw") return UNDO_REVEALED;
    // The position shown is the one that move made, so its stock is the one it left.
    if (typeof last === "string" && last.startsWith("stock-") && shown.stock && shown.stock.count > 0) return UNDO_REVEALED;
    return toFoundation(last) ? UNDO_FOUNDATION : "";
  }

  // The move an undo at version v would take back, once the move history has said (the
  // state names only the undo that made v); until then undefined, the button stays on and
  // the server judges. One request per version, and only after an undo in a ranked attempt.
  undoneTo(v) {
    if (this.undoTop && this.undoTop.v === v) return this.undoTop.move;
    if (this.undoTopAsked === v) return undefined;
    this.undoTopAsked = v;
    historyTo(this.game.id, v).then((rows) => {
      const made = [];
      for (const row of rows) {
        if (row.move === "undo") made.pop();
        else made.push(row.move);
      }
      this.undoTop = { v, move: made[made.length - 1] || null };
      if (this.server.v === v) this.render();
    }, () => { this.undoTopAsked = null; }); // asked again at the next drawing
    return undefined;
  }

  renderClock() {
    let secs;
    if (this.status === "playing" && !this.server.day_over) {
      secs = Math.max(0, Math.floor((serverNow() - Date.parse(this.game.started_at)) / 1000));
    } else {
      secs = this.seconds || 0;
    }
    this.clockEl.textContent = formatSeconds(secs);
    this.clockEl.dataset.seconds = String(secs);
  }

  connStatus(status, info) {
    this.conn = { status, reason: info.reason, retryAt: Date.now() + (info.retryIn || 0) };
    this.renderConn();
    this.connEl.dataset.state = status;
    if (status !== "open") this.root.dataset.synced = "0";
    this.connEl.title = status === "open" ? "Connected to the server"
      : `Not connected${info.reason ? ` (the server said: ${info.reason})` : ""}: moves wait until the connection is back`;
    // Said once, as the server closed: a restart is news, too many sockets or frames a fault.
    if (status === "waiting" && info.reason) {
      this.message(`The server closed the connection: ${info.reason}`, info.code === 4429 ? "error" : "info");
    }
  }

  // A hint's words go with its rings once the player moves: they named a table now gone.
  dropHint() {
    if (this.table.hinted) this.table.clearHint();
    if (this.msgEl.textContent.startsWith("Hint:")) {
      clearTimeout(this.msgTimer);
      this.msgEl.classList.remove("show");
    }
  }

  // The connection pill: counts down to the next try while offline, and says how many of
  // the player's moves wait to be sent.
  renderConn() {
    const c = this.conn;
    if (!c) return;
    const secs = Math.max(0, Math.ceil((c.retryAt - Date.now()) / 1000));
    let text = {
      connecting: "connecting…",
      open: "live",
      waiting: secs ? `offline · retry in ${secs}s` : "offline · retrying…",
      closed: c.reason ? `closed: ${c.reason}` : "closed",
    }[c.status];
    const waiting = this.queue.length;
    if (c.status !== "open" && waiting) text += ` · ${plural(waiting, "move")} to send`;
    this.connEl.textContent = text;
  }

  clearError() {
    if (this.msgEl.dataset.kind !== "error") return;
    clearTimeout(this.msgTimer);
    this.msgEl.classList.remove("show");
  }

  message(text, kind = "error") {
    if (this.externalMessage) this.externalMessage(text, kind);
    this.msgEl.textContent = text;
    this.msgEl.dataset.kind = kind;
    this.msgEl.classList.add("show");
    this.msgShownAt = performance.now();
    clearTimeout(this.msgTimer);
    this.msgTimer = setTimeout(() => this.msgEl.classList.remove("show"), kind === "error" ? 8000 : 4000);
  }

  // A press on the table puts the message away: the player has moved on, and on a page
  // scrolled down it lies over cards. Not one that came this instant (the two taps of a
  // double tap, a refusal said while the press that caused it is still held).
  messageRead() {
    if (!this.msgEl.classList.contains("show") || performance.now() - this.msgShownAt < MESSAGE_MIN_MS) return;
    clearTimeout(this.msgTimer);
    this.msgEl.classList.remove("show");
  }

  // ---- actions ---------------------------------------------------------------------------

  submit(move, info = {}) {
    if (this.readOnly) return;
    if (this.status !== "playing") return;
    this.dropHint();
    this.enqueue({ kind: "move", move, from: info.from });
  }

  undo() {
    if (this.readOnly || !(this.status === "playing" || this.reopenable())) return;
    this.dropHint();
    this.table.cancel();
    this.enqueue({ kind: "undo" });
  }

  // Offline, one action waits to be sent and no more: it is the one the table can show as
  // played (a second would be made on a position the server has not confirmed, and might
  // not be what the player saw), and a player who saw nothing happen does not repeat it.
  enqueue(item) {
    if (this.waitingOffline()) {
      this.message("Not connected: your last action waits to be sent; the next can follow once the connection is back.", "info");
      this.render();
      return;
    }
    // Made on a position not yet confirmed: what it moves is remembered, to be checked
    // against the server's position when its turn comes (pump).
    item.behind = !!(this.inflight || this.queue.length);
    if (item.behind && item.kind === "move") item.cards = movedCards(this.display(), item.move);
    // The version it is made on: the server's, once every action before it has landed. It is
    // sent with that version, so a position that moved on meanwhile (another tab, another
    // device, while this one was offline) refuses it instead of taking it on other cards.
    item.v = this.server.v + (this.inflight ? 1 : 0) + this.queue.length;
    this.queue.push(item);
    this.pump();
    this.render();
  }

  // Whether an action waits for a connection that is down (render runs once before the socket
  // exists: nothing waits then).
  waitingOffline() {
    return !!this.socket && !this.socket.isOpen && !!(this.inflight || this.queue.length);
  }

  async hint() {
    if (this.readOnly || this.status !== "playing" || !this.hintBtn || this.hintBtn.disabled) return;
    this.hintBtn.disabled = true;
    const asked = this.server.v;
    try {
      const { move } = await get(`/api/games/${this.game.id}/hint`);
      // The player moved (or undid) while the solver thought: the hint is for a table gone.
      if (this.server.v !== asked || this.inflight || this.queue.length) return;
      if (move) {
        this.table.showHint(move);
        this.message(`Hint: ${describeMove(this.server, move)}`, "info");
      } else {
        // Every move from here leads back to a position this game has stood at (README).
        this.message(
          "No hint: every move from here goes back to where this game has been. Undo to try another way.",
          "info",
        );
      }
    } catch (err) {
      this.message(err.detail || String(err), "error");
      // Throttled: the button rests until the server takes hints again, and says when.
      if (err.status === 429 && err.retryAfter) this.hintResumeAt = Date.now() + err.retryAfter * 1000;
    } finally {
      this.renderHint();
    }
  }

  // Whether play is left, from the table as shown, as Undo and Resign read it (a move on its
  // way never ends a game there: the client cannot know the cards it would turn).
  renderHint(shown = this.display()) {
    if (!this.hintBtn) return;
    const playing = shown.status === "playing" && !shown.day_over;
    const wait = Math.ceil(((this.hintResumeAt || 0) - Date.now()) / 1000);
    this.hintBtn.disabled = !playing || wait > 0;
    this.hintBtn.title = wait > 0 ? `Too many hints: again in ${wait} s` : "Hint (h)";
    clearTimeout(this.hintTimer);
    if (wait > 0) this.hintTimer = setTimeout(() => this.renderHint(), 1000);
  }

  async resign() {
    if (this.readOnly || this.status !== "playing") return;
    if (this.asking) return;
    if (!this.socket.isOpen) return this.message("Not connected: you can resign once the connection is back.", "error");
    const ranked = this.game.daily && this.game.daily.ranked;
    this.asking = confirmDialog("Resign this game?",
      ranked
        ? "Your ranked attempt ends as it stands and ranks by the cards it has home; its time is the time of your last move, not of now."
        : "It ends as it stands.",
      "Resign");
    const sure = await this.asking;
    this.asking = null;
    if (!sure || this.status !== "playing") return;
    if (!this.socket.send({ t: "resign", d: { id: `r-${++this.seq}` } })) {
      this.message("Not connected: the game was not resigned. Try again once the connection is back.", "error");
    }
  }

  pump() {
    if (this.inflight || !this.queue.length) return;
    if (!this.socket.isOpen) {
      const what = yourAction(this.queue[this.queue.length - 1]);
      this.message(`Not connected: ${what} will be sent when the connection is back.`, "info");
      this.renderConn();
      return;
    }
    const item = this.queue.shift();
    const why = this.outdated(item);
    if (why) {
      this.queue = []; // what followed it was aimed at a table it assumed
      this.message(why, "error");
      this.render();
      return;
    }
    const id = `${item.kind === "undo" ? "u" : "m"}-${++this.seq}`;
    const v = item.v;
    if (item.kind === "undo") {
      this.inflight = { id, kind: "undo", v };
      this.socket.send({ t: "undo", d: { v, id } });
    } else {
      this.inflight = { id, kind: "move", move: item.move, from: item.from, v }; // display() draws it
      this.socket.send({ t: "move", d: { move: item.move, v, id } });
    }
    this.armFlightTimer();
    this.render();
  }

  // Why a move made behind another, aimed at the table as it would be, is not to be sent
  // now that the server has answered the one before: the server's position has no such move,
  // or the move would take other cards (a draw landed on the waste meanwhile). Null: send it.
  outdated(item) {
    if (item.v !== this.server.v) return movedOn(item, "was sent");
    if (!item.behind || item.kind !== "move") return null;
    if (!(this.server.legal_moves || []).includes(item.move)) {
      return `Not played: ${describeMove(this.server, item.move)} is not a legal move once the move before it is made.`;
    }
    if (movedCards(this.server, item.move) !== item.cards) {
      return "Not played: the cards changed under your last move before it could be sent.";
    }
    return null;
  }

  armFlightTimer() {
    clearTimeout(this.flightTimer);
    this.flightTimer = setTimeout(() => {
      if (this.inflight) this.socket.drop(); // no answer: reconnect, the state on connect decides
    }, FLIGHT_TIMEOUT_MS);
  }

  resend() {
    const f = this.inflight;
    if (f.kind === "undo") this.socket.send({ t: "undo", d: { v: f.v, id: f.id } });
    else this.socket.send({ t: "move", d: { move: f.move, v: f.v, id: f.id } });
    this.armFlightTimer();
  }

  keyDown(e) {
    // An open dialog (the resign question, the result) has the keyboard.
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || modalOpen()) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (["input", "textarea", "select"].includes(tag)) return;
    if (e.key === "Escape") {
      if (this.table.cancel()) e.preventDefault();
    } else if ((e.key === "u" || e.key === "U") && !this.readOnly) {
      e.preventDefault();
      if (!this.undoBtn.disabled) this.undo(); // as the button: not what the server refuses
      else if (this.undoRuled) this.message(this.undoRuled, "info");
    } else if ((e.key === "h" || e.key === "H") && !this.readOnly) {
      this.hint();
    } else if ((e.key === "d" || e.key === "D") && !this.readOnly) {
      if ((this.server.legal_moves || []).includes("draw")) this.submit("draw");
      // A key that does nothing says why, where there is a stock to draw from (Countess).
      else if (this.variant.piles && this.variant.piles.waste && this.server.status === "playing") {
        this.message("The stock is empty: there is nothing left to draw.", "info");
      }
    }
  }

  // ---- server frames ---------------------------------------------------------------------

  frame(f) {
    if (f.t === "state") this.onState(f.v, f.d);
    else if (f.t === "ack") this.onAck(f.d || {});
    else if (f.t === "error") this.onError(f.d || {});
    else if (f.t === "result") this.onResult(f.d || {});
  }

  onState(v, d) {
    const fresh = this.freshConnection;
    this.freshConnection = false;
    // The table now shows what this connection's server says (tests and tools wait on it).
    this.root.dataset.synced = "1";
    const before = this.server.v;
    const prev = this.server;
    this.server = { v, ...d };
    if (v === before + 1 && d.last_move) {
      this.announceEl.textContent = d.last_move === "undo" ? describeUndo(prev, this.server) : describeMove(prev, d.last_move, this.server);
    }
    const f = this.inflight;
    let lost = null; // an action whose answer went with the old connection, overtaken
    if (f) {
      const landed = f.acked || (v === f.v + 1 && d.last_move === actionString(f));
      if (v > f.v && (landed || fresh)) {
        this.inflight = null; // it landed, or the game moved on without it
        clearTimeout(this.flightTimer);
        this.clearError(); // a refusal from before no longer describes the table
        if (!landed) {
          this.queue = []; // made behind it, on a table that is not the server's
          // Its answer was lost with the old connection and will never come: the player is
          // told whether it was made (below, after the news of the reconnect).
          lost = f;
        }
      } else if (v > f.v) {
        // Another tab or device took its version: on this open socket its refusal
        // (stale_version) follows. Until then it is not drawn, nor is anything sent behind it.
        f.overtaken = true;
        this.queue = [];
      } else if (fresh && v === f.v) {
        this.resend(); // lost with the old connection: same version, so it cannot apply twice
      }
    }
    const wasPlaying = this.status === "playing";
    this.status = d.status;
    if (!wasPlaying && d.status === "playing") this.reopened();
    if (this.render() && !this.readOnly) {
      this.message("The cards you picked up were moved in another tab or on another device.", "info");
    }
    if (wasPlaying && d.status !== "playing" && !this.result) {
      // Finished, but no result frame yet (it follows, or we reconnected after it): fetch.
      this.refreshFinished();
    }
    if (fresh) {
      this.connections = (this.connections || 0) + 1;
      if (this.connections > 1) {
        this.message(before !== v ? "Reconnected: the table is back in sync." : "Reconnected.", "info");
      }
    }
    if (lost) this.tellIfNotMade(lost, v);
    this.pump();
  }

  // An action whose answer was lost with its connection, while the game moved on: whether it
  // was made is in the history (the row played on its version). Said only if it was not.
  tellIfNotMade(f, v) {
    const told = () => this.message(movedOn(f, "reached the server"), "error");
    if (v === f.v + 1) return told(); // the one action made on its version was another
    get(`/api/games/${this.game.id}/moves?after=${f.v}&limit=1`).then((rows) => {
      const made = rows && rows[0] ? rows[0].move : null;
      if (made !== null && made !== actionString(f)) told();
    }, () => {});
  }

  // The state frame that follows carries the change; the ack says it is this socket's own
  // action that made it, not another device's move on the same version.
  onAck(d) {
    if (this.inflight && d.id != null && d.id === this.inflight.id) this.inflight.acked = true;
  }

  onError(d) {
    const f = this.inflight;
    const mine = f && d.id != null && d.id === f.id;
    if (mine) {
      this.inflight = null;
      clearTimeout(this.flightTimer);
      this.queue = []; // later input was aimed at a screen that is being rolled back
    }
    this.message(refusalMessage(d), "error");
    this.render({ flash: mine && f.kind === "move" ? parseMove(f.move)?.from : null });
    if (d.code === "stale_version" || d.code === "game_over" || (typeof d.v === "number" && d.v !== this.server.v)) {
      this.socket.send({ t: "sync" });
    }
    this.pump();
  }

  onResult(d) {
    this.result = d;
    this.status = d.status;
    if (typeof d.seconds === "number") this.seconds = d.seconds;
    this.render();
    this.showFinished(true);
  }

  async refreshFinished() {
    const asked = this.server.v;
    try {
      const g = await get(`/api/games/${this.game.id}`);
      // An undo took the game back into play while the request was out (a stuck practice
      // game): the answer describes an ending that is gone, and would have put its banner
      // back, and its status, on a game being played.
      if (this.server.v !== asked || g.v !== asked) return;
      this.game = g;
      this.seconds = g.seconds;
      this.status = g.status;
      // A face-down stock's deal number is public once its game is over (selectors.deal_visible).
      this.titleEl.replaceChildren(...gameTitle(g, this.variant));
      this.renderClock();
      this.showFinished();
    } catch (err) {
      /* the banner shows what we have */
    }
  }

  // A stuck practice game taken back into play by an undo (from this tab or another).
  reopened() {
    this.result = null;
    this.bannerEl.hidden = true;
    this.onReopened();
  }

  // The board beside a finished ranked attempt moves as others finish: the banner's rank
  // (the player's own, on their own attempt) follows it.
  rankChanged(rank) {
    if (this.readOnly || !(this.game.daily && this.game.daily.ranked) || this.bannerEl.hidden) return;
    if (typeof rank !== "number" || (this.result || this.game).rank === rank) return;
    this.game.rank = rank;
    if (this.result) this.result.rank = rank;
    this.showFinished();
  }

  showFinished(live = false) {
    const d = this.result || {
      status: this.status, moves: this.server.v, seconds: this.seconds, rank: this.game.rank ?? null,
      foundation_cards: null,
    };
    this.renderClock();
    this.bannerEl.hidden = false;
    this.bannerEl.dataset.status = d.status;
    const closed = d.status === "playing" && this.server.day_over;
    this.bannerEl.replaceChildren(h("strong", {}, closed ? "Day over" : statusText(d.status)),
      ` · ${plural(d.moves, "move")} · ${formatSeconds(d.seconds || 0)}`,
      d.rank ? ` · rank #${d.rank}` : "",
      " · ", h("a", { href: `#/replay/${this.game.id}`, "data-testid": "replay-link" }, "Replay"));
    this.onFinished(d, { live, view: this });
  }
}

// The cards a move takes from its pile on this table, as one string ("" if it cannot tell).
function movedCards(state, move) {
  const p = parseMove(move);
  if (!p || p.draw) return "";
  return topCards(state, p.from, p.n);
}

// The first `v` moves of a game's history, page after page: an answer carries at most 5,000
// (the server's MOVES_PAGE), and a ranked attempt may have made more than that.
async function historyTo(gameId, v) {
  const rows = [];
  while (rows.length < v) {
    const after = rows.length ? rows[rows.length - 1].n : 0;
    const page = await get(`/api/games/${gameId}/moves?after=${after}&limit=${v - rows.length}`);
    if (!page.length) break;
    rows.push(...page);
  }
  return rows;
}
