// The live leaderboard of one daily challenge: REST for the first look and your own row,
// then `/ws/leaderboards/{date}/{variant}` pushes the top 20 whenever the board changes.

import { get } from "./api.js";
import { ReconnectingSocket } from "./socket.js";
import { formatSeconds, h, plural, statusText } from "./ui.js";

// A board's connection pill, as the game's says it: a board that stopped updating says so.
export function boardConn(testid = "board-conn") {
  return h("span", { class: "conn small", "data-testid": testid, "data-state": "connecting" }, "…");
}

export function showBoardConn(el, status, info) {
  el.dataset.state = status;
  if (info.reason) el.title = `The server closed the connection: ${info.reason}`;
  else if (status === "open") el.title = "";
  el.textContent = {
    open: "live", connecting: "connecting…", waiting: "offline · reconnecting", closed: "offline",
  }[status] || status;
}

export class Leaderboard {
  constructor(root, { date, variant, me, today = null, watchAfterAttempt = false, title = "Leaderboard", onMine = null }) {
    this.root = root;
    this.onMine = onMine || (() => {}); // told of the signed-in player's own entry as it changes
    this.date = date;
    this.today = today;
    this.watchAfterAttempt = watchAfterAttempt;
    this.variant = variant;
    this.me = me;
    this.entries = [];
    this.total = 0;
    this.mine = null;
    this.tbody = h("tbody", {});
    this.totalEl = h("span", { class: "muted", "data-testid": "lb-total" }, "");
    this.connEl = boardConn("lb-conn");
    this.meEl = h("p", { class: "lb-me", "data-testid": "lb-me", hidden: true });
    root.classList.add("leaderboard");
    root.dataset.testid = "leaderboard";
    root.replaceChildren(
      h("div", { class: "lb-head" }, h("h3", {}, title), this.connEl),
      h("p", { class: "muted small" }, `${date} · `, this.totalEl),
      h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Player"), h("th", {}, "Cards"),
          h("th", {}, "Moves"), h("th", {}, "Time"))),
        this.tbody),
      this.meEl,
    );
    this.render();
    this.load();
    this.socket = new ReconnectingSocket(`/ws/leaderboards/${date}/${variant}`, {
      onframe: (f) => {
        if (f.t === "error" && f.d) {
          // This board cannot be served (the socket stays open, and says why).
          this.connEl.dataset.state = "closed";
          this.connEl.textContent = "unavailable";
          this.connEl.title = f.d.detail || "";
          return;
        }
        if (f.t === "leaderboard" && f.d) {
          this.entries = f.d.entries || [];
          if (typeof f.d.total === "number") this.total = f.d.total;
          this.render();
          this.refreshMine();
        }
      },
      onstatus: (status, info) => showBoardConn(this.connEl, status, info),
    });
  }

  destroy() {
    this.socket.close();
  }

  async load() {
    try {
      const board = await get(`/api/daily/${this.date}/${this.variant}/leaderboard?page=1&page_size=20`);
      if (!this.entries.length) {
        this.entries = board.entries || [];
        this.total = board.total ?? this.entries.length;
      }
      this.mine = board.me || null;
      this.render();
      this.onMine(this.mine);
    } catch (err) {
      if (!this.entries.length) this.tbody.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "muted" }, err.detail)));
    }
  }

  async refreshMine() {
    if (!this.me) return;
    const before = this.canWatch();
    const listed = this.entries.find((e) => e.username === this.me.username);
    if (listed) {
      this.mine = listed;
    } else {
      try {
        const board = await get(`/api/daily/${this.date}/${this.variant}/leaderboard?page=1&page_size=1`);
        this.mine = board.me || null;
      } catch (err) {
        return; /* keep what we have */
      }
    }
    if (this.canWatch() !== before) this.render();
    else this.renderMine();
    this.onMine(this.mine);
  }

  render() {
    this.totalEl.textContent = `${this.total} ranked`;
    if (!this.entries.length) {
      this.tbody.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No finished attempts yet.")));
    } else {
      this.tbody.replaceChildren(...this.entries.map((e) => this.row(e)));
    }
    this.renderMine();
  }

  // Anyone may watch any game, unless the server hides today's games until your own attempt
  // is over (GET /api/daily says so: they show the deal as played).
  canWatch() {
    if (!this.watchAfterAttempt) return true;
    if (this.today && this.date < this.today) return true;
    return !!this.mine && this.mine.status !== "playing";
  }

  row(e) {
    const isMe = this.me && e.username === this.me.username;
    const name = e.game_id != null && (isMe || this.canWatch())
      ? h("a", isMe
        ? { class: "name", href: `#/play/${e.game_id}`, title: "Your game", "aria-label": `${e.username}: your game` }
        : { class: "name", href: `#/watch/${e.game_id}`, title: `Watch ${e.username}'s game`, "aria-label": `Watch ${e.username}'s game` }, e.username)
      : h("span", { class: "name", title: `${e.username}: finish your own attempt to watch the others` }, e.username);
    return h("tr", { class: isMe ? "me" : "", "data-testid": "lb-row", "data-username": e.username, "data-rank": e.rank },
      h("td", {}, String(e.rank)),
      h("td", { class: "who" }, h("span", { class: "who-line" }, name, e.status && e.status !== "won" ? h("span", { class: `st st-${e.status}` }, ` ${statusText(e.status)}`) : h("span", { class: "st st-won" }, " \u2713"))),
      h("td", {}, e.foundation_cards ?? ""),
      h("td", {}, e.moves ?? ""),
      h("td", {}, formatSeconds(e.seconds)),
    );
  }

  renderMine() {
    const m = this.mine;
    if (!m || this.entries.some((e) => this.me && e.username === this.me.username)) {
      this.meEl.hidden = true;
      return;
    }
    this.meEl.hidden = false;
    this.meEl.textContent = `You: #${m.rank} · ${statusText(m.status)} · ${plural(m.moves, "move")} · ${formatSeconds(m.seconds)}`;
  }
}
