// A game's replay: its table at any version, from the deal to where it stands.
//
// The positions come from the server (GET /api/games/{id}/positions), which replays the game
// from its deal: the page holds no rules, and a replay shows each position exactly as its
// players saw it, face-down cards still face down. They are read 200 at a time, the first
// page before anything is shown, the rest while the first ones are looked at.

import { get } from "./api.js";
import { describeMove } from "./cards.js";
import { Table } from "./table.js";
import { h, statusText } from "./ui.js";

const PAGE = 200;
const STEP_MS = 700; // between positions while playing

export class ReplayView {
  constructor(root, { game, variant, onError }) {
    this.root = root;
    this.game = game;
    this.variant = variant;
    this.onError = onError || (() => {});
    this.positions = [];
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
    this.pause();
    document.removeEventListener("keydown", this._keys);
    this.table.destroy();
  }

  build() {
    const g = this.game;
    const title = [this.variant.name,
      ...(g.daily ? [" · Daily ", h("span", { class: "nowrap" }, g.daily.date)] : g.deal ? [` · Deal ${g.deal}`] : [])];
    const button = (testid, label, title, act) => {
      const b = h("button", { type: "button", "data-testid": testid, title }, label);
      b.addEventListener("click", act);
      return b;
    };
    this.firstBtn = button("replay-first", "Start", "The deal (Home)", () => this.show(0));
    this.prevBtn = button("replay-prev", "◀ Back", "Back one move (←)", () => this.show(this.at - 1));
    this.playBtn = button("replay-play", "Play", "Play (space)", () => this.toggle());
    this.nextBtn = button("replay-next", "Forward ▶", "Forward one move (→)", () => this.show(this.at + 1));
    this.lastBtn = button("replay-last", "End", "Where the game stands (End)", () => this.show(this.positions.length - 1));
    this.slider = h("input", { type: "range", min: "0", max: "0", value: "0", "data-testid": "replay-slider", "aria-label": "Position" });
    this.slider.addEventListener("input", () => this.show(Number(this.slider.value)));
    this.posEl = h("span", { class: "stat-value", "data-testid": "replay-at" }, "");
    this.lastEl = h("p", { class: "replay-move", "data-testid": "replay-move", role: "status", "aria-live": "polite" });
    this.tableEl = h("section", { class: "table", "aria-label": `${this.variant.name} table, replay` });
    this.root.replaceChildren(
      h("div", { class: "game-bar" },
        h("div", { class: "game-title" }, h("h2", {}, ...title), h("span", { class: "tag" }, `Replay · ${g.owner}`)),
        h("div", { class: "stats" }, h("span", { class: "stat" }, h("span", { class: "stat-label" }, "Move "), this.posEl)),
        h("div", { class: "actions" }, h("a", { href: `#/play/${g.id}`, class: "button quiet" }, "Back to the game"))),
      h("div", { class: "replay-controls" }, this.firstBtn, this.prevBtn, this.playBtn, this.nextBtn, this.lastBtn, this.slider),
      this.lastEl,
      this.tableEl,
      h("p", { class: "help" }, h("span", { class: "keys" }, "Keyboard: ← and → step through the moves, Home and End go to either end, space plays.")));
    this.root.classList.add("game", "replay");
    this.root.dataset.gameId = String(g.id);
  }

  // Reads every position, a page at a time; shows the first as soon as it is in.
  async load() {
    let start = 0;
    while (!this.closed) {
      const page = await get(`/api/games/${this.game.id}/positions?start=${start}&limit=${PAGE}`);
      if (this.closed) return;
      this.positions.push(...page);
      this.slider.max = String(Math.max(0, this.positions.length - 1));
      if (start === 0) this.show(0);
      else this.renderControls();
      if (page.length < PAGE) break;
      start = page[page.length - 1].v + 1;
    }
    this.root.dataset.loaded = "1";
    this.renderControls();
  }

  show(i) {
    if (!this.positions.length) return;
    this.at = Math.max(0, Math.min(i, this.positions.length - 1));
    const { state } = this.positions[this.at];
    this.table.render(state);
    this.slider.value = String(this.at);
    this.root.dataset.v = String(this.positions[this.at].v);
    this.renderControls();
    this.lastEl.textContent = this.describe();
  }

  describe() {
    const { state } = this.positions[this.at];
    const before = this.at > 0 ? this.positions[this.at - 1].state : null;
    const move = state.last_move;
    let text = !move ? "The deal." : move === "undo" ? "Undo: the move before is taken back."
      : `${describeMove(before, move)}.`;
    if (this.at === this.positions.length - 1 && this.root.dataset.loaded === "1" && state.status !== "playing") {
      text += ` ${statusText(state.status)}.`;
    }
    return text;
  }

  renderControls() {
    const last = this.positions.length - 1;
    const total = this.game.v;
    this.posEl.textContent = `${this.positions.length ? this.positions[this.at].v : 0} of ${total}`;
    this.firstBtn.disabled = this.prevBtn.disabled = this.at <= 0;
    this.nextBtn.disabled = this.lastBtn.disabled = this.at >= last;
    this.playBtn.disabled = last <= 0;
    this.playBtn.textContent = this.timer ? "Pause" : "Play";
    this.playBtn.title = this.timer ? "Pause (space)" : "Play (space)";
  }

  toggle() {
    if (this.timer) return this.pause();
    if (this.at >= this.positions.length - 1) this.show(0);
    this.timer = setInterval(() => {
      if (this.at >= this.positions.length - 1) return this.pause();
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
    if (e.altKey || e.ctrlKey || e.metaKey || e.target.closest?.("input, textarea, select")) return;
    const act = { ArrowLeft: () => this.show(this.at - 1), ArrowRight: () => this.show(this.at + 1),
      Home: () => this.show(0), End: () => this.show(this.positions.length - 1), " ": () => this.toggle() }[e.key];
    if (!act) return;
    e.preventDefault();
    if (e.key !== " ") this.pause();
    act();
  }
}
