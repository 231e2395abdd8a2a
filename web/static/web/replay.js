// A game's replay: its table at any version, from the deal to where it stands.
//
// The positions come from the server (GET /api/games/{id}/positions), which replays the game
// from its deal: the page holds no rules, and a replay shows each position exactly as its
// players saw it, face-down cards still face down. They are read a page of 200 at a time, as
// they are needed (the page of the position shown, and of the one before it, whose cards name
// the move), and the next page while the end of one is looked at: a long game is not read
// whole to show its first moves.

import { get } from "./api.js";
import { describeMove, describeUndo } from "./cards.js";
import { Table } from "./table.js";
import { gameTitle, h, statusText } from "./ui.js";

const PAGE = 200;
const STEP_MS = 700; // between positions while playing
// A slider dragged across a long game: a page is read once it rests this long, not for every
// position it passes (one sweep of a 24,000-version game asked for 122 pages).
const SEEK_MS = 250;

export class ReplayView {
  constructor(root, { game, variant }) {
    this.root = root;
    this.game = game;
    this.variant = variant;
    this.last = game.v; // the versions 0..last, as the game stood when it was opened
    this.pages = new Map(); // page number -> its positions, once read
    this.reading = new Map(); // page number -> the request reading it
    this.at = 0;
    this.timer = null;
    this.closed = false;
    this.build();
    this.table = new Table(this.tableEl, variant, { readOnly: true });
    this._keys = (e) => this.keyDown(e);
    document.addEventListener("keydown", this._keys);
  }

  destroy() {
    this.closed = true;
    clearTimeout(this.seekTimer);
    this.pause();
    document.removeEventListener("keydown", this._keys);
    this.table.destroy();
  }

  build() {
    const g = this.game;
    const button = (testid, label, title, act) => {
      const b = h("button", { type: "button", "data-testid": testid, title }, label);
      b.addEventListener("click", act);
      return b;
    };
    // A step by hand pauses the play, as its key does.
    const step = (to) => () => {
      this.pause();
      this.show(to());
    };
    this.firstBtn = button("replay-first", "Start", "The deal (Home)", step(() => 0));
    this.prevBtn = button("replay-prev", "◀ Back", "Back one move (←)", step(() => this.at - 1));
    this.playBtn = button("replay-play", "Play", "Play (space)", () => this.toggle());
    this.nextBtn = button("replay-next", "Forward ▶", "Forward one move (→)", step(() => this.at + 1));
    this.lastBtn = button("replay-last", "End", "Where the game stands (End)", step(() => this.last));
    this.slider = h("input", { type: "range", min: "0", max: "0", value: "0", "data-testid": "replay-slider", "aria-label": "Position" });
    this.slider.addEventListener("input", () => this.seek(Number(this.slider.value)));
    this.slider.addEventListener("change", () => {
      clearTimeout(this.seekTimer);
      this.show(Number(this.slider.value));
    });
    this.posEl = h("span", { class: "stat-value", "data-testid": "replay-at" }, "");
    this.lastEl = h("p", { class: "replay-move", "data-testid": "replay-move", role: "status", "aria-live": "polite" });
    this.tableEl = h("section", { class: "table", "aria-label": `${this.variant.name} table, replay` });
    this.root.replaceChildren(
      h("div", { class: "game-bar" },
        h("div", { class: "game-title" }, h("h2", {}, ...gameTitle(g, this.variant)), h("span", { class: "tag" }, `Replay · ${g.owner}`)),
        h("div", { class: "stats" }, h("span", { class: "stat" }, h("span", { class: "stat-label" }, "Move "), this.posEl)),
        h("div", { class: "actions" }, h("a", { href: `#/play/${g.id}`, class: "button quiet" }, "Back to the game"))),
      h("div", { class: "replay-controls" }, this.firstBtn, this.prevBtn, this.playBtn, this.nextBtn, this.lastBtn, this.slider),
      this.lastEl,
      this.tableEl,
      h("p", { class: "help" }, h("span", { class: "keys" }, "Keyboard: ← and → step through the moves, Home and End go to either end, space plays.")));
    this.root.classList.add("game", "replay");
    this.root.dataset.gameId = String(g.id);
  }

  // Shows the deal; the rest is read as it is asked for.
  async load() {
    this.slider.max = String(this.last);
    await this.show(0);
    this.root.dataset.loaded = "1";
  }

  position(v) {
    const page = this.pages.get(Math.floor(v / PAGE));
    return page ? page[v % PAGE] : undefined;
  }

  read(n) {
    if (this.pages.has(n)) return Promise.resolve();
    if (!this.reading.has(n)) {
      const request = get(`/api/games/${this.game.id}/positions?start=${n * PAGE}&limit=${PAGE}`)
        .then((page) => this.pages.set(n, page))
        .finally(() => this.reading.delete(n));
      this.reading.set(n, request);
    }
    return this.reading.get(n);
  }

  // The slider moved: a position whose pages are in is shown at once, another once the
  // slider rests.
  seek(i) {
    this.pause();
    clearTimeout(this.seekTimer);
    const v = Math.max(0, Math.min(i, this.last));
    if (this.position(v) && (v === 0 || this.position(v - 1))) return this.show(v);
    this.at = v;
    this.renderControls();
    this.lastEl.textContent = "Loading…";
    this.seekTimer = setTimeout(() => this.show(v), SEEK_MS);
  }

  async show(i) {
    const v = Math.max(0, Math.min(i, this.last));
    this.at = v;
    this.slider.value = String(v);
    this.renderControls();
    const needed = [Math.floor(v / PAGE), ...(v > 0 ? [Math.floor((v - 1) / PAGE)] : [])];
    if (needed.some((n) => !this.pages.has(n))) {
      this.lastEl.textContent = "Loading…";
      try {
        await Promise.all(needed.map((n) => this.read(n)));
      } catch (err) {
        if (this.at === v) this.lastEl.textContent = err.detail || String(err); // where the move's words go
        return;
      }
    }
    if (this.closed || this.at !== v) return; // another position was asked for meanwhile
    const shown = this.position(v);
    if (!shown) return; // past the game's end as it is now
    this.table.render(shown.state);
    this.root.dataset.v = String(v);
    this.lastEl.textContent = this.describe(v);
    if (v % PAGE >= PAGE - 50 && v + 1 <= this.last) this.read(Math.floor(v / PAGE) + 1).catch(() => {});
  }

  describe(v) {
    const { state } = this.position(v);
    const move = state.last_move;
    const before = move && this.position(v - 1).state;
    let text = !move ? "The deal." : move === "undo" ? `${describeUndo(before, state)}.`
      : `${describeMove(before, move, state)}.`;
    if (v === this.last && state.status !== "playing") text += ` ${statusText(state.status)}.`;
    else if (v === this.last && state.day_over) text += " Day over: the attempt counts as it stands.";
    return text;
  }

  renderControls() {
    this.posEl.textContent = `${this.at} of ${this.last}`;
    // A button about to be disabled with the focus on it would strand the keyboard there:
    // the focus moves to the slider, which works at either end.
    const had = document.activeElement;
    this.firstBtn.disabled = this.prevBtn.disabled = this.at <= 0;
    this.nextBtn.disabled = this.lastBtn.disabled = this.at >= this.last;
    if (had && had.disabled && [this.firstBtn, this.prevBtn, this.nextBtn, this.lastBtn].includes(had)) {
      this.slider.focus();
    }
    this.playBtn.disabled = this.last <= 0;
    this.playBtn.textContent = this.timer ? "Pause" : "Play";
    this.playBtn.title = this.timer ? "Pause (space)" : "Play (space)";
  }

  toggle() {
    if (this.timer) return this.pause();
    if (this.last <= 0) return; // a game of no move: nothing to play
    if (this.at >= this.last) this.show(0);
    this.timer = setInterval(() => {
      if (this.at >= this.last) return this.pause();
      if (this.root.dataset.v !== String(this.at)) return; // still reading the one asked for
      this.show(this.at + 1);
    }, STEP_MS);
    this.renderControls();
  }

  pause() {
    clearInterval(this.timer);
    this.timer = null;
    if (!this.closed) this.renderControls();
  }

  keyDown(e) {
    // A key the table used (the arrows among its piles) or a focused button's own (Space and
    // Enter press it: Space on *Forward* started playing instead) is not the replay's.
    if (e.altKey || e.ctrlKey || e.metaKey || e.defaultPrevented) return;
    if ((e.key === " " || e.key === "Enter") && e.target.closest?.("button, a")) return;
    // The slider takes the arrows, Home and End itself; space, which it has no use for, plays.
    const field = e.target.closest?.("input, textarea, select");
    if (field && !(field === this.slider && e.key === " ")) return;
    const act = { ArrowLeft: () => this.show(this.at - 1), ArrowRight: () => this.show(this.at + 1),
      Home: () => this.show(0), End: () => this.show(this.last), " ": () => this.toggle() }[e.key];
    if (!act) return;
    e.preventDefault();
    if (e.key !== " ") this.pause();
    act();
  }
}
