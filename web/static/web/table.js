// The card table of one game: draws a state, and turns pointer, click and keyboard input into
// move strings. It knows nothing of sockets: it calls `onMove(move)` and the game decides.
//
// Input:
//  - drag and drop with pointer events (mouse, pen and touch alike);
//  - click a card or pile to pick it, click a target to drop (click the same pile to cancel);
//  - double click / double tap a card to send it to a foundation (a legal `X-fN` move);
//  - keyboard: piles are focusable; Enter/Space picks and drops, Escape cancels, arrows move
//    the focus, `f` sends the focused pile's card to a foundation.
// Legal targets of the picked card(s) are highlighted from `state.legal_moves`.

import {
  backElement, cardElement, cardName, isSequence, moveString, parseMove, pileCards, pileLabel, topCards,
} from "./cards.js";

const DRAG_THRESHOLD = 6;
// A drag this close to the top or bottom of the window scrolls the page, this far a frame.
const EDGE_PX = 48;
const EDGE_STEP_PX = 12;
const MAX_COLW = 120; // a card's widest (a large screen)
const MIN_FIT_COLW = 48; // the narrowest a card gets to keep a long pile on screen
// … and in two rows (a phone), to keep a fresh deal on screen: as narrow as a 360px phone's
// width makes Portuguese Solitaire's cards (44px). Where even these leave the deal's piles
// below the screen (a 320px phone), the cards keep the width's size and the page scrolls.
const MIN_TWO_ROW_COLW = 44;
const ONE_ROW = 46; // the narrowest card that keeps the tableau on one row (else two rows)
const ONE_ROW_SHORT = 38; // … on a screen under 500px high held sideways, where two rows overflow
const MIN_SIDE_COLW = 34; // … and the narrowest card there, the top row's piles beside the tableau
const FIT_AT_LEAST = 8; // piles are fitted as if this long, so the cards keep their size early on
// The cards grow back only once the longest pile is this many cards shorter than the one they
// were sized for: a card moved onto it and off again resized every card on the table each
// time (Chinese FreeCell held sideways: 14 times in a game), moving the targets under a finger.
const REGROW_SLACK = 3;
// How many cards a deal puts on the tableau (RULES.md P1, S1, K1, B1, F1), round-robin (D3).
const DEALT = { portuguese: 52, spanish: 52, countess: 4, barricade: 36, chinese_freecell: 78 };
// A phone held sideways (style.css, the same media query): the game's bar may stand in a column
// left of the table, 8rem wide and .6rem from it (style.css .game.bar-beside).
const SIDEWAYS = "(max-height: 500px) and (orientation: landscape)";
const BAR_COLUMN_REM = 8.6;

// The closest a tableau card may lie on the one before it: the corner's rank and suit (its
// font-size is max(12px, 30 % of the width), style.css), its top offset and a 2px gap.
function leastFan(colw) {
  return Math.ceil(colw * 1.4 * 0.02 + Math.max(12, colw * 0.3) + 2);
}
// The height of a pile of `cards` cards `colw` wide, fanned as close as their corners allow.
function pileHeight(colw, cards) {
  return colw * 1.4 + (cards - 1) * leastFan(colw);
}
// How far a tableau card shows under the next where there is room (fanPiles).
function baseFan(colw) {
  return Math.max(leastFan(colw), Math.round(colw * 0.36));
}
// The height of a pile of `cards` cards `colw` wide, fanned so, as fanPiles fans a short pile.
function fannedHeight(colw, cards) {
  return colw * 1.4 + (cards - 1) * Math.floor(baseFan(colw));
}
// An element's width, padding included (as clientWidth), rounded down: clientWidth rounds a
// column beside the leaderboard (655.56px at 1024px) up to 656, and a top row planned for 656
// wrapped its last foundation onto a line of its own (Countess from 1000 to 1024px wide).
function widthOf(el) {
  return Math.floor(el.getBoundingClientRect().width);
}
// The height from an element's top to the bottom of the window (the page scrolled to its top).
function heightBelow(el) {
  return window.innerHeight - (el.getBoundingClientRect().top + window.scrollY);
}
// How many piles the top row holds: the stock, the waste, the cells and the foundations.
function topSlots(p) {
  return (p.stock ? 1 : 0) + (p.waste ? 1 : 0) + p.cells + p.foundations;
}
// The width of a table whose `n` piles stand in one row of cards `colw` wide, `gap` apart and
// off its edges by a gap (its padding, var(--gap)).
function rowWidth(n, colw, gap) {
  return n * colw + (n + 1) * gap;
}
// The narrowest table that keeps a variant's tableau on one row of ONE_ROW cards (layout()),
// at the 8px gap of a table over 560px wide, as a game's column beside a leaderboard always is
// (from a 961px window). Below it the piles take two rows.
export function oneRowWidth(variant) {
  return rowWidth(variant.piles.tableau, ONE_ROW, 8);
}
const DOUBLE_TAP_MS = 350;
// How long after a stack is refused a click on another pile is taken as its drop, not a pick.
const REFUSED_DROP_MS = 4000;

// What an empty tableau pile takes (RULES.md P4, F5; K5, B5: nothing; S4, any card, is left
// unmarked): the mark the empty pile shows (its `data-mark`, style.css) and what a screen
// reader hears beside "empty".
const KING_ONLY = { mark: "K", said: ", a King only" };
const CLOSED = { mark: "\u2715", said: ", closed for good" };
const EMPTY_TABLEAU = { portuguese: KING_ONLY, chinese_freecell: KING_ONLY, countess: CLOSED, barricade: CLOSED };

// Where the sequence that ends a column starts (RULES.md F4): the lowest index from which its
// cards to the top move as one.
function sequenceStart(cards) {
  let start = cards.length - 1;
  while (start > 0 && isSequence(cards.slice(start - 1, start + 1))) start -= 1;
  return start;
}

export class Table {
  constructor(root, variant, { readOnly = false, onMove, onMessage, game = null } = {}) {
    this.root = root;
    this.game = game; // the game's element, whose bar stands beside the table or above it (placeBar)
    this.variant = variant; // an entry of GET /api/variants
    this.readOnly = readOnly;
    this.onMove = onMove || (() => {});
    this.onMessage = onMessage || (() => {});
    this.state = null;
    this.picked = null; // {pile, n}
    this.refused = null; // {pile, why, at}: a stack just refused (activate)
    this.press = null;
    this.drag = null;
    this.lastTap = null;
    this.sequences = variant.id === "chinese_freecell";
    this.piles = new Map();
    this.build();
    this._down = (e) => this.pointerDown(e);
    this._move = (e) => this.pointerMove(e);
    this._up = (e) => this.pointerUp(e);
    // The browser took the touch (a scroll, a zoom): no drag, and its end is no tap.
    this._cancel = () => {
      this.press = null;
      this.cancelDrag();
    };
    this._key = (e) => this.keyDown(e);
    this._ctx = (e) => {
      if (e.target.closest(".card")) e.preventDefault();
    };
    root.addEventListener("pointerdown", this._down);
    root.addEventListener("pointermove", this._move);
    root.addEventListener("pointerup", this._up);
    root.addEventListener("pointercancel", this._cancel);
    root.addEventListener("keydown", this._key);
    root.addEventListener("contextmenu", this._ctx);
    this.resizer = new ResizeObserver(() => this.layout());
    this.resizer.observe(root);
    this._resize = () => this.layout(); // a window made shorter: the table's width stays
    window.addEventListener("resize", this._resize);
  }

  destroy() {
    this.resizer.disconnect();
    window.removeEventListener("resize", this._resize);
    this.cancelDrag();
    this.root.removeEventListener("pointerdown", this._down);
    this.root.removeEventListener("pointermove", this._move);
    this.root.removeEventListener("pointerup", this._up);
    this.root.removeEventListener("pointercancel", this._cancel);
    this.root.removeEventListener("keydown", this._key);
    this.root.removeEventListener("contextmenu", this._ctx);
  }

  // ---- structure -------------------------------------------------------------------------

  build() {
    const v = this.variant;
    const p = v.piles;
    this.root.classList.add("table");
    this.root.dataset.variant = v.id;
    this.root.dataset.testid = "table";
    this.root.innerHTML = "";
    this.drawn = new Map(); // pile id -> what it shows (drawPile): a pile unchanged is not redrawn
    const top = el("div", "top");
    const left = el("div", "group left");
    const right = el("div", "group foundations");
    if (p.stock) left.append(this.pileEl("stock", "stock"));
    if (p.waste) left.append(this.pileEl("waste", "waste"));
    for (let i = 0; i < p.cells; i++) left.append(this.pileEl(`c${i}`, "cell"));
    for (let i = 0; i < p.foundations; i++) right.append(this.pileEl(`f${i}`, "foundation"));
    top.append(left, right);
    const tableau = el("div", "tableau");
    const empty = EMPTY_TABLEAU[v.id];
    for (let i = 0; i < p.tableau; i++) {
      const pile = this.pileEl(`t${i}`, "tableau-pile");
      if (empty) pile.dataset.mark = empty.mark;
      tableau.append(pile);
    }
    this.tableauEl = tableau;
    this.root.append(top, tableau);
    this.layout();
  }

  pileEl(id, kind) {
    const pile = el("div", `pile ${kind}`);
    pile.dataset.pile = id;
    pile.dataset.testid = `pile-${id}`;
    pile.tabIndex = 0;
    // A pile that can be pressed is a button; on a table only watched or replayed it is a
    // named group, still reached by Tab and the arrows so that a screen reader reads its cards.
    pile.setAttribute("role", this.readOnly ? "group" : "button");
    this.piles.set(id, pile);
    return pile;
  }

  // Column width from the space we have: all tableau piles in one row when they stay
  // readable, else in two rows (phones). In one row the height counts too: on a wide, short
  // screen (a laptop) the cards shrink until the longest pile, fanned as close as its corners
  // allow, ends on screen, down to MIN_FIT_COLW; so its last card, the one that plays, stays
  // in reach without scrolling. Two rows (phones, a portrait tablet) are sized for a fresh
  // deal (DEALT): they shrink until the deal's piles end on screen, down to MIN_TWO_ROW_COLW;
  // a longer pile scrolls, its cards would get too small. A phone held sideways has too
  // little height for a long pile under the top row: there the top row's piles may stand in
  // columns beside the tableau instead (sideLayout), whichever of the two gives the larger
  // cards that keep the longest pile on screen.
  layout() {
    const kept = this.placeBar(); // first: it sets the table's width
    const width = widthOf(this.root);
    if (!width) return;
    const plan = kept || this.plan(width, heightBelow(this.root));
    const { gap, cols, colw, top, side } = plan;
    const n = this.variant.piles.tableau;
    const p = this.variant.piles;
    const slots = topSlots(p);
    this.room = plan.room;
    this.root.classList.toggle("side-piles", Boolean(side)); // not "side": the leaderboard aside's
    if (side) {
      this.root.style.setProperty("--lrows", String(side.lrows));
      this.root.style.setProperty("--frows", String(side.frows));
    }
    this.root.classList.toggle("top-split", top.split);
    // Two lines, the foundations' half of a line each beside the rest (Barricade A on a phone:
    // the stock, then eight foundations): the foundations as one block of two rows, not a
    // second line that starts under the stock, which read as a ninth foundation.
    const fcols = Math.ceil(p.foundations / 2);
    this.root.classList.toggle("top-block", this.topBlock(top, side));
    this.root.style.setProperty("--fcols", String(fcols));
    this.root.style.setProperty("--topw", `${top.topw}px`);
    // Piles narrower than the table (cards shrunk for a long pile, or for the height a
    // replay's controls leave): the top row takes the tableau's width, so that its ends line
    // up with the tableau's columns. Its lines, split in two (cells over foundations), each
    // start at the tableau's left: a phone's Chinese FreeCell replay had them at the table's
    // edge, 20 px left of the centred tableau.
    const tableauWidth = cols * colw + (cols - 1) * gap;
    const perLine = top.split ? Math.max(slots - p.foundations, p.foundations) : slots;
    const aligned = !side && (top.lines === 1 || top.split) && perLine * (top.topw + gap) - gap <= tableauWidth;
    const topmax = top.balance || (aligned ? tableauWidth : 0);
    this.root.style.setProperty("--topmax", topmax ? `${topmax}px` : "none");
    this.root.style.setProperty("--cols", String(cols));
    this.root.style.setProperty("--colw", `${colw}px`);
    this.root.style.setProperty("--gap", `${gap}px`);
    this.root.classList.toggle("compact", colw < 58);
    this.root.classList.toggle("two-rows", cols < n);
    this.root.classList.toggle("has-stock", Boolean(p.stock || p.waste)); // room for captions
    this.colw = colw;
    this.rows = cols < n ? 2 : 1;
    this.fanPiles();
  }

  // The layout of a table `width` wide whose piles may reach `avail` px down from its top
  // (layout(), and placeBar() to weigh the bar beside the table against the bar above it).
  // Returns {gap, cols, colw, top, side, room, fits}: `side` the top row's piles beside the
  // tableau (sideLayout) or null, `room` what the tableau's piles may fan into (0: fanPiles'
  // own), `fits` whether the longest pile as it stands ends on screen.
  plan(width, avail) {
    const n = this.variant.piles.tableau;
    // A phone held sideways is short, not narrow: two rows of piles there took the cards to
    // twice the screen's height (Portuguese Solitaire's 13 at 667 by 375), so it keeps one row
    // of narrower cards, closer together.
    const short = window.innerHeight < 500 && width > window.innerHeight;
    const gap = width < 560 || short ? 4 : 8;
    const room = width - 2 * gap; // inside the table's padding (var(--gap)): cards stay off its edge
    let cols = n;
    if (width < rowWidth(n, short ? ONE_ROW_SHORT : ONE_ROW, gap)) cols = Math.ceil(n / 2);
    let colw = Math.max(34, Math.min(MAX_COLW, Math.floor((room - (cols - 1) * gap) / cols)));
    const p = this.variant.piles;
    const slots = topSlots(p);
    const captions = Boolean(p.stock || p.waste);
    let top = this.topRow(width, gap, slots, cols, colw);
    // Above the tableau: the table's padding, the top row's lines, their gaps and captions
    // (a second line's too, but for the foundations' block beside the stock, which has none).
    const above = (t) =>
      2 * gap + t.lines * (t.topw * 1.4) + (t.lines - 1) * gap
      + (captions ? 2 * gap + 12 + (this.topBlock(t, null) ? 0 : (t.lines - 1) * 12) : 2 * gap);
    const lengths = this.pileLengths();
    const now = Math.max(1, ...lengths);
    if (cols < n) {
      // Two rows: the deal's piles, each row as tall as its longest, fanned as fanPiles fans
      // them, end on screen (a portrait tablet's 600 by 900: Chinese FreeCell's second row
      // ended 21px below it).
      const dealt = this.dealtLengths();
      const rows = [dealt.slice(0, cols), dealt.slice(cols)].map((r) => Math.max(1, ...r));
      // If even MIN_TWO_ROW_COLW cards leave them below it, the cards keep the width's size.
      const tall = (c, t) => above(t) + rows.reduce((sum, k) => sum + fannedHeight(c, k), 0) + 2 * gap;
      let fit = colw;
      let fitTop = top;
      while (fit > MIN_TWO_ROW_COLW && tall(fit, fitTop) > avail) {
        fit -= 1;
        fitTop = this.topRow(width, gap, slots, cols, fit);
      }
      const fits = tall(fit, fitTop) <= avail;
      if (fits) [colw, top] = [fit, fitTop];
      return { gap, cols, colw, top, side: null, room: 0, fits };
    }
    const longest = this.sizedFor(Math.max(FIT_AT_LEAST, ...lengths));
    const pile = (c) => pileHeight(c, longest);
    while (colw > MIN_FIT_COLW && above(top) + pile(colw) > avail) {
      colw = Math.max(MIN_FIT_COLW, colw - 2);
      top = this.topRow(width, gap, slots, cols, colw);
    }
    const fitsNow = above(top) + pileHeight(colw, now) <= avail;
    if (short) {
      // Beside the tableau, the cards are sized for a long pile, as above; but the top row
      // gives way only when a pile that is there now would end below the screen under it,
      // or the side gets larger cards: tested on the pretended long pile, it gave a fresh
      // deal's short piles far smaller cards (Barricade A at 667 by 375: 37 px against 48).
      const beside = this.sideLayout(width, gap, avail, pile);
      if (beside && (!fitsNow || (beside.fits && beside.colw > colw))) {
        return {
          gap, cols, colw: beside.colw, top: { topw: beside.colw, split: false, lines: 1, balance: 0 },
          side: beside, room: avail - 2 * gap - 2, fits: 2 * gap + pileHeight(beside.colw, now) <= avail,
        };
      }
    }
    return { gap, cols, colw, top, side: null, room: avail - above(top) - 2, fits: fitsNow };
  }

  // The pile length the cards are sized for: the longest pile's as it grows, kept as it
  // shrinks until it is REGROW_SLACK cards shorter.
  sizedFor(longest) {
    const was = this.sizedLength || 0;
    if (longest > was || longest <= was - REGROW_SLACK) this.sizedLength = longest;
    return this.sizedLength;
  }

  // Whether the top row's two lines are the stock (or cells) beside the foundations in a block
  // of two rows (Barricade A on a phone), not a line each (layout()).
  topBlock(top, side) {
    const p = this.variant.piles;
    const slots = topSlots(p);
    const fcols = Math.ceil(p.foundations / 2);
    return !side && top.lines === 2 && !top.split && slots - p.foundations + fcols === Math.ceil(slots / 2);
  }

  // How many cards each tableau pile of a fresh deal holds (RULES.md D3: dealt round-robin).
  dealtLengths() {
    const n = this.variant.piles.tableau;
    const cards = DEALT[this.variant.id];
    if (!cards) return this.pileLengths();
    return Array.from({ length: n }, (_, i) => Math.floor(cards / n) + (i < cards % n ? 1 : 0));
  }

  // A phone held sideways: the game's bar (title, counters, buttons) stands in a column left
  // of the table, which then has the screen's height down from the header, where the table
  // beside it still holds the tableau on one row of ONE_ROW_SHORT cards and, for a long pile,
  // the top row's piles in columns beside the tableau (sideLayout), and where its cards are
  // then no smaller than with the bar above (plan(), the longest pile on screen); else the
  // bar stays above the table, which keeps the column's width. Asked of each variant and of the game's column,
  // not the screen (a daily's leaderboard may stand beside it): it was one width for all, a
  // 690px column (a 710px screen), which Portuguese Solitaire's thirteen piles need. Beside the
  // bar, Chinese FreeCell's eighteen-card pile ends on a 667px screen (above it, 31px below);
  // Barricade A's fifteen columns at 34px need a 739px screen (beside the bar at 710 to 738px
  // its long pile ended up to 31px below the screen, and a fresh deal's cards were 41px,
  // where above it they are 48px).
  placeBar() {
    const game = this.game;
    if (!game) return null;
    // Chosen once a screen (its size, the game's column), then kept while the game is played:
    // weighed again on every move, the bar jumped beside the table as a pile grew long and the
    // buttons under the player's finger moved. It moves only when the longest pile would end
    // below the screen where the bar stands now. Returns the table's plan when it kept the
    // bar where it was (layout() uses it rather than planning the same table again), else null.
    if (!window.matchMedia(SIDEWAYS).matches) {
      game.classList.remove("bar-beside");
      this.barScreen = null; // held sideways again, the place is chosen again
      return null;
    }
    const screen = `${widthOf(game)}x${window.innerHeight}`;
    if (this.state && this.barScreen === screen) {
      const plan = this.plan(widthOf(this.root), heightBelow(this.root));
      if (plan.fits) return plan;
    }
    const rem = parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
    const width = widthOf(game) - BAR_COLUMN_REM * rem;
    const avail = heightBelow(game);
    let beside = width >= rowWidth(this.variant.piles.tableau, ONE_ROW_SHORT, 4)
      && this.sideLayout(width, 4, avail, (c) => pileHeight(c, 1)) !== null;
    if (beside && this.state) {
      // Both places weighed, the table measured with the bar above it: the one whose
      // cards are larger with the longest pile on screen (the bar beside on a tie, its
      // title whole). Beside the bar, Portuguese Solitaire's fresh deal at 844 by 390 had
      // 48px cards, where the bar above left 53px ones, a long pile still on screen.
      game.classList.remove("bar-beside");
      const above = this.plan(widthOf(this.root), heightBelow(this.root));
      const here = this.plan(width, avail);
      beside = here.fits !== above.fits ? here.fits : here.colw >= above.colw;
    }
    game.classList.toggle("bar-beside", beside);
    if (this.state) this.barScreen = screen;
    return null;
  }

  // The top row (stock, waste, cells, foundations): its card width, and whether it takes
  // two lines. On two lines, the foundations take a line of their own when each group fits
  // on one at nearly the same size: else the first foundation stayed beside the cells
  // (Chinese FreeCell on a phone) and the others wrapped below it.
  topRow(width, gap, slots, cols, colw) {
    const p = this.variant.piles;
    const spacer = slots < cols ? 0 : gap * 2;
    let topw = Math.floor((width - (slots - 1) * gap - spacer) / slots);
    if (topw < 40) topw = Math.floor((width - Math.ceil(slots / 2) * gap - spacer) / Math.ceil(slots / 2));
    topw = Math.max(34, Math.min(colw, topw));
    const inner = width - 2 * gap; // inside the table's padding
    const most = Math.max(slots - p.foundations, p.foundations);
    const fit = Math.floor((inner - (most - 1) * gap) / most);
    const split = slots * (topw + gap) - gap > inner && fit >= topw * 0.9;
    if (split) topw = Math.min(topw, fit);
    const lines = split || slots * (topw + gap) - gap > inner ? 2 : 1;
    // Two lines with no split (Barricade A on a phone: the stock and eight foundations): as
    // many on each, not six over three.
    const per = Math.ceil(slots / 2);
    const balance = lines === 2 && !split ? per * (topw + gap) - gap : 0;
    return { topw, split, lines, balance };
  }

  // The top row's piles in columns beside the tableau (a phone held sideways): the stock,
  // the waste and the cells on its left, the foundations on its right, each group in as few
  // columns as the height takes, their piles shared out evenly between them. The widest cards,
  // down to MIN_SIDE_COLW, with which the longest pile (`pile(colw)`, its height) ends on
  // screen; if none do, the narrowest that fit the width (`fits` false); null if none do.
  // Returns {colw, lrows, frows, fits}.
  sideLayout(width, gap, avail, pile) {
    const p = this.variant.piles;
    const n = p.tableau;
    const left = (p.stock ? 1 : 0) + (p.waste ? 1 : 0) + p.cells;
    const right = p.foundations;
    const caption = p.stock || p.waste ? 12 : 0;
    const inner = width - 2 * gap; // inside the table's padding
    const height = avail - 2 * gap;
    let shape = null;
    for (let colw = Math.min(MAX_COLW, Math.floor((inner - (n - 1) * gap) / n)); colw >= MIN_SIDE_COLW; colw--) {
      const rows = Math.max(1, Math.floor((height + gap) / (colw * 1.4 + gap + caption)));
      const lcols = Math.ceil(left / rows);
      const fcols = Math.ceil(right / rows);
      const count = n + lcols + fcols;
      // A group stands 2 gaps from the tableau (style.css), to read as apart from it.
      const wide = count * colw + (count - 1) * gap + ((lcols ? 1 : 0) + (fcols ? 1 : 0)) * gap;
      if (wide > inner) continue;
      shape = { colw, lrows: lcols ? Math.ceil(left / lcols) : 1, frows: Math.ceil(right / fcols) };
      if (2 * gap + pile(colw) <= avail) return { ...shape, fits: true };
    }
    return shape && { ...shape, fits: false };
  }

  pileLengths() {
    if (!this.state) return [];
    return [...this.piles.keys()].filter((id) => id[0] === "t").map((id) => pileCards(this.state, id).length);
  }

  // How far each tableau card shows under the next: a little more than its corner, closer
  // for long piles so that a pile stays on screen, but never so close that the corner's rank
  // and suit are cut (a long pile then makes the page scroll).
  fanPiles() {
    if (!this.colw || !this.state) return;
    const ch = this.colw * 1.4;
    const least = leastFan(this.colw);
    const base = baseFan(this.colw);
    const room = Math.max(ch * 2, this.room || window.innerHeight * (this.rows > 1 ? 0.36 : 0.56));
    for (const [id, pile] of this.piles) {
      if (id[0] !== "t") continue;
      const count = pileCards(this.state, id).length;
      const fan = count > 1 ? Math.min(base, Math.max(least, (room - ch) / (count - 1))) : base;
      pile.style.setProperty("--fan", `${Math.floor(fan)}px`);
    }
  }

  // ---- drawing ---------------------------------------------------------------------------

  render(state, { flash = null } = {}) {
    if (state !== this.state) this.refused = null; // the table changed: a new choice
    if (this.hinted && state.moves !== this.hintAt) this.clearHint(); // it pointed at another table
    this.state = state;
    const lost = this.dropStalePick();
    const last = state.last_move ? parseMove(state.last_move) : null;
    for (const [id, pile] of this.piles) {
      this.drawPile(id, pile, state, last);
    }
    this.root.classList.toggle("read-only", this.readOnly);
    this.root.classList.toggle("finished", state.status !== "playing");
    this.layout(); // a longer pile may need smaller cards
    this.highlight();
    if (flash) this.flash(flash);
    return lost;
  }

  // A pick holds on to the cards it took. A table redrawn from elsewhere (another tab or
  // device played, a refused move rolled back) may have taken them away: the pick is dropped
  // then, with a drag that carries them, rather than passed on to whatever card now lies
  // there (a click on a foundation would send a card the player never picked). True if the
  // cards went; false if the pick stands or only ended with the game.
  dropStalePick() {
    const p = this.picked;
    if (!p) return false;
    const lost = topCards(this.state, p.pile, p.n) !== p.cards;
    if (!lost && this.canPick(p.pile, p.n)) return false;
    this.picked = null;
    if (this.drag) {
      this.cancelDrag();
      this.press = null; // its release is not a click on the pile it started on
    }
    return lost;
  }

  // A move changes two or three piles: only those are drawn again. Drawing all of them on
  // every state was most of a move's work in the page (Chinese FreeCell: 37 ms a move, held
  // sideways on a slow core), and it dropped the lifted look of cards held in a drag when
  // another device's move arrived.
  drawPile(id, pile, state, last) {
    const cards = pileCards(state, id);
    const count = id === "stock" ? state.stock.count : cards.length;
    const marked = last && !last.draw && last.to === id && cards.length ? last.n : 0;
    const shows = `${count}|${cards.join(" ")}|${marked}`;
    if (this.drawn.get(id) === shows) return;
    this.drawn.set(id, shows);
    pile.replaceChildren();
    if (id === "stock") {
      if (state.stock.top) {
        // A face-up stock (Barricade A) shows the edge of the cards under its top one.
        const top = cardElement(state.stock.top, 0);
        top.classList.toggle("stacked", count > 1);
        pile.append(top);
      } else if (count > 0) {
        pile.append(backElement(`Stock, ${count} face-down cards`));
      }
      if (count > 0) pile.append(badge(count));
    } else if (id === "waste" || id[0] === "f") {
      // Only the top card of a waste or foundation matters; show it and how many lie below.
      if (cards.length) {
        const card = cardElement(cards[cards.length - 1], cards.length - 1);
        // A card on a foundation never leaves it (RULES.md C3): not dragged, a touch scrolls.
        if (id[0] === "f") card.classList.add("fixed");
        pile.append(card);
      }
      if (cards.length > 1) pile.append(badge(cards.length));
    } else {
      // Only a column's top card can be dragged, or in Chinese FreeCell a card that heads a
      // sequence up to the top (RULES.md F4): a touch on one under it scrolls the page
      // (style.css), as on a face-down card, and a tap on it is still a tap on its pile. (A
      // swipe that started on a buried card picked its cards, to refuse them as no sequence.)
      const movable = this.sequences ? sequenceStart(cards) : cards.length - 1;
      cards.forEach((code, i) => {
        const card = cardElement(code, i);
        if (i < movable) card.classList.add("fixed");
        pile.append(card);
      });
    }
    // The stock and the waste are named under them: a face-up stock (Barricade A) with its
    // count looked like a foundation.
    if (id === "stock" || id === "waste") pile.append(caption(id === "stock" ? "Stock" : "Waste"));
    pile.classList.toggle("empty", count === 0);
    if (marked) {
      const top = pile.querySelectorAll(".card.face");
      for (let k = Math.max(0, top.length - marked); k < top.length; k++) {
        top[k].classList.add("last");
      }
    }
    pile.dataset.label = this.describe(id, cards, count);
    pile.setAttribute("aria-label", pile.dataset.label);
  }

  describe(id, cards, count) {
    const name = pileLabel(id);
    if (id === "stock") {
      if (!count) return `${name}: empty`;
      const top = this.state.stock.top;
      if (top) return `${name}: ${cardName(top)} on top, ${count} cards`;
      return `${name}: ${count} cards${this.readOnly ? "" : ", draw"}`;
    }
    if (!cards.length) return `${name}: empty${id[0] === "t" ? EMPTY_TABLEAU[this.variant.id]?.said || "" : ""}`;
    const said = `${name}: ${cardName(cards[cards.length - 1])} on top, ${cards.length} card${cards.length > 1 ? "s" : ""}`;
    // A column's cards are all face up (RULES.md C2) and a player plans from them: a screen
    // reader hears those under the top one too, from the top down, as the eye reads them.
    if (id[0] !== "t" || cards.length < 2) return said;
    return `${said}; under it ${cards.slice(0, -1).reverse().map(cardName).join(", ")}`;
  }

  // What a picked pile adds to its name: the cards picked, when they are more than its top one
  // (Enter again on a Chinese FreeCell column takes more).
  pickedSaid(id) {
    const n = this.pickedCardCount(id);
    if (n < 2) return ", picked up";
    const cards = pileCards(this.state, id).slice(-n);
    return `, ${n} cards picked up, ${cardName(cards[0])} to ${cardName(cards[n - 1])}`;
  }

  highlight() {
    const targets = this.picked ? this.targets(this.picked.pile, this.picked.n) : new Set();
    const hinted = this.hinted || [];
    for (const [id, pile] of this.piles) {
      pile.classList.toggle("target", targets.has(id));
      pile.classList.toggle("hint", hinted.includes(id));
      const isSource = !!this.picked && this.picked.pile === id;
      pile.classList.toggle("source", isSource);
      // What the eye sees in colour, a screen reader hears: the pile picked up, the targets.
      if (!this.readOnly) pile.setAttribute("aria-pressed", String(isSource));
      const role = isSource ? this.pickedSaid(id) : targets.has(id) ? ", a place to put it" : "";
      if (pile.dataset.label) pile.setAttribute("aria-label", pile.dataset.label + role);
      const faces = pile.querySelectorAll(".card");
      faces.forEach((c, k) => {
        c.classList.toggle("picked", isSource && k >= faces.length - this.pickedCardCount(id));
      });
    }
    this.root.classList.toggle("picking", !!this.picked);
  }

  pickedCardCount(id) {
    if (!this.picked || this.picked.pile !== id) return 0;
    return this.picked.n;
  }

  // Point at a suggested move (from GET /api/games/{id}/hint) for a few seconds, or until the
  // table changes.
  showHint(move) {
    const p = parseMove(move);
    this.hinted = p && !p.draw ? [p.from, p.to] : ["stock"];
    this.hintAt = this.state ? this.state.moves : null;
    this.highlight();
    clearTimeout(this.hintTimer);
    this.hintTimer = setTimeout(() => this.clearHint(), 4000);
  }

  clearHint() {
    clearTimeout(this.hintTimer);
    this.hinted = null;
    this.highlight();
  }

  flash(id) {
    const pile = this.piles.get(id);
    if (!pile) return;
    pile.classList.remove("refused");
    void pile.offsetWidth; // restart the animation
    pile.classList.add("refused");
    setTimeout(() => pile.classList.remove("refused"), 700);
  }

  // ---- rules the client needs ------------------------------------------------------------

  legalMoves() {
    return (this.state && this.state.legal_moves) || [];
  }

  targets(from, n) {
    const set = new Set();
    for (const m of this.legalMoves()) {
      const p = parseMove(m);
      if (p && !p.draw && p.from === from && p.n === n) set.add(p.to);
    }
    return set;
  }

  // The smallest count above `n` of cards from pile `id` that a legal move takes, or 0.
  nextCount(id, n) {
    let next = 0;
    for (const m of this.legalMoves()) {
      const p = parseMove(m);
      if (p && !p.draw && p.from === id && p.n > n && (!next || p.n < next)) next = p.n;
    }
    return next;
  }

  canPick(id, n = 1) {
    return this.pickable(id, n) && (n === 1 || this.stackRefusal(id, n) === null);
  }

  // Whether the player may take `n` cards of pile `id` at all, whatever they are.
  pickable(id, n) {
    if (!this.state || this.readOnly || this.state.status !== "playing") return false;
    if (id[0] === "f") return false; // a card on a foundation never leaves it
    return pileCards(this.state, id).length >= n && n >= 1;
  }

  // Why `n` cards of tableau pile `id` cannot move as one (RULES F4), or null if they can.
  // Judged by the cards shown, not by `legal_moves`: the table may show moves still on their
  // way, whose position the server has not listed moves for yet.
  stackRefusal(id, n) {
    const cards = pileCards(this.state, id).slice(-n);
    if (!isSequence(cards)) {
      return `Those ${n} cards are not a sequence: each card must be one rank lower than, and of another suit than, the one beneath it.`;
    }
    const free = (this.state.cells || []).filter((c) => !c).length;
    if (n > free + 1) {
      return `${n} cards cannot move together with ${free} free cell${free === 1 ? "" : "s"} empty: at most ${free + 1}.`;
    }
    return null;
  }

  // A press on a buried card that takes more cards than can move together says why, rather
  // than picking a stack no move can take. Returns why, or null.
  refuseStack(id, n) {
    const why = n > 1 && this.pickable(id, n) ? this.stackRefusal(id, n) : null;
    if (why) this.onMessage(why);
    return why;
  }

  // How many cards a press on card `index` of pile `id` takes.
  countFor(id, index) {
    if (!this.sequences || id[0] !== "t" || index == null) return 1;
    const len = pileCards(this.state, id).length;
    return Math.max(1, len - index);
  }

  // ---- actions ---------------------------------------------------------------------------

  pick(id, n = 1) {
    this.refused = null;
    this.picked = { pile: id, n, cards: topCards(this.state, id, n) };
    this.highlight();
  }

  cancel() {
    this.refused = null;
    // Escape during a drag puts the held cards back: the release that follows plays nothing.
    const dragged = Boolean(this.drag);
    if (dragged) {
      this.cancelDrag();
      this.press = null;
    }
    if (!this.picked) return dragged;
    this.picked = null;
    this.highlight();
    return true;
  }

  send(from, to, n) {
    this.picked = null;
    this.highlight();
    this.onMove(moveString(from, to, n), { from, to, n });
  }

  // One click/tap/Enter on a pile (`n` = how many cards the press would take).
  activate(id, n = 1) {
    if (this.readOnly) {
      this.onMessage("You are watching this game: only its owner can play.");
      return;
    }
    if (!this.state || this.state.status !== "playing") return;
    if (this.picked) {
      if (this.picked.pile === id) {
        if (n !== this.picked.n && this.canPick(id, n)) this.pick(id, n);
        else this.cancel();
        return;
      }
      this.send(this.picked.pile, id, this.picked.n);
      return;
    }
    const refused = this.refused;
    this.refused = null;
    if (refused && refused.pile !== id && performance.now() - refused.at < REFUSED_DROP_MS) {
      // The click that was to drop a stack just refused: it is refused too, not a pick of the
      // pile the player meant as the target (whose next click would send a move never meant).
      this.flash(id);
      this.onMessage(refused.why);
      return;
    }
    if (id === "stock" && !this.state.stock.top) {
      if (this.state.stock.count > 0) this.onMove("draw", { draw: true });
      return;
    }
    if (this.canPick(id, n)) this.pick(id, n);
    else {
      const why = this.refuseStack(id, n);
      if (why) this.refused = { pile: id, why, at: performance.now() };
    }
  }

  // Why Enter on pile `id`, with nothing picked, picks nothing: a foundation's cards stay, an
  // empty pile has none (the stock, drawn from, is not one of these). Null where it picks.
  nothingToPick(id) {
    if (this.readOnly || !this.state || this.state.status !== "playing") return null;
    if (id === "stock" && !this.state.stock.top) {
      return this.state.stock.count > 0 ? null : "The stock is empty.";
    }
    if (id[0] === "f") return "A card on a foundation stays there: pick a card elsewhere to bring here.";
    if (!pileCards(this.state, id).length) return "Nothing to pick up: this pile is empty.";
    return null;
  }

  // Double click / double tap: to a foundation, if the rules allow it.
  toFoundation(id) {
    if (this.readOnly || !this.state || this.state.status !== "playing") return;
    this.cancel();
    const move = this.legalMoves().find((m) => {
      const p = parseMove(m);
      return p && !p.draw && p.from === id && p.n === 1 && p.to[0] === "f";
    });
    if (move) {
      const p = parseMove(move);
      this.onMove(move, p);
    } else if (pileCards(this.state, id).length) {
      const cards = pileCards(this.state, id);
      this.onMessage(`${cardName(cards[cards.length - 1])} cannot go to a foundation now.`);
    }
  }

  tap(id, n) {
    const now = performance.now();
    // A face-down stock has no card to send up: each click on it draws, however quick.
    const draws = id === "stock" && !!this.state && !this.state.stock.top;
    if (!draws && this.lastTap && this.lastTap.id === id && now - this.lastTap.at < DOUBLE_TAP_MS) {
      this.lastTap = null;
      this.toFoundation(id);
      return;
    }
    // A tap that drops the picked card(s) on this pile ends a move: it is not the first half of
    // a double tap, or a quick tap to pick the card just dropped would send it to a foundation.
    const drops = !!this.picked && this.picked.pile !== id;
    this.lastTap = drops ? null : { id, at: now };
    this.activate(id, n);
  }

  // ---- pointer input ---------------------------------------------------------------------

  pointerDown(e) {
    if (e.button !== 0 && e.pointerType === "mouse") return;
    const pileEl = e.target.closest("[data-pile]");
    if (!pileEl || !this.root.contains(pileEl)) {
      this.cancel();
      return;
    }
    const id = pileEl.dataset.pile;
    const cardEl = e.target.closest(".card");
    const index = cardEl && cardEl.dataset.index != null ? Number(cardEl.dataset.index) : null;
    const n = this.countFor(id, index);
    // A face-down card, or one marked .fixed (on a foundation, under a column's top without
    // sequence moves), cannot be dragged; a press on it still works as a click on its pile.
    const draggable = index != null && !cardEl.classList.contains("fixed");
    // A touch where style.css lets the page scroll (a card that cannot be dragged, a watched
    // or finished table, a pile's bare ground) is the browser's once it moves: a swipe there
    // scrolls, and is neither a drag, nor a tap, nor a watcher's "only its owner can play".
    const pans = e.pointerType === "touch" && getComputedStyle(cardEl || pileEl).touchAction !== "none";
    this.press = { id, n, x: e.clientX, y: e.clientY, pointerId: e.pointerId, cardEl, draggable, pans };
    if (e.pointerType !== "mouse") e.preventDefault();
  }

  pointerMove(e) {
    const press = this.press;
    if (!press || e.pointerId !== press.pointerId) return;
    if (this.drag) {
      this.moveDrag(e.clientX, e.clientY);
      e.preventDefault();
      return;
    }
    const dist = Math.hypot(e.clientX - press.x, e.clientY - press.y);
    if (dist < DRAG_THRESHOLD) return;
    if (press.pans) {
      this.press = null;
      return;
    }
    if (this.readOnly) {
      this.press = null;
      this.onMessage("You are watching this game: only its owner can play.");
      return;
    }
    if (!press.draggable || !this.canPick(press.id, press.n)) {
      this.press = null;
      // Cards that may not move together say why (refuseStack: only several cards, in Chinese
      // FreeCell, can be refused so), dragged by a mouse; a finger's swipe there scrolled, above.
      this.refuseStack(press.id, press.n);
      return;
    }
    this.startDrag(press, e);
  }

  pointerUp(e) {
    const press = this.press;
    if (!press || e.pointerId !== press.pointerId) return;
    this.press = null;
    if (this.drag) {
      this.endDrag(e.clientX, e.clientY);
      return;
    }
    this.tap(press.id, press.n);
  }

  startDrag(press, e) {
    const pile = this.piles.get(press.id);
    const cards = [...pile.querySelectorAll(".card")].filter((c) => !c.classList.contains("badge"));
    const moving = cards.slice(cards.length - press.n);
    if (!moving.length) return;
    this.pick(press.id, press.n);
    const first = moving[0].getBoundingClientRect();
    const layer = el("div", "drag-layer");
    layer.dataset.testid = "drag-layer";
    layer.dataset.variant = this.variant.id; // the cards keep the variant's colours in flight
    layer.style.setProperty("--colw", `${this.colw || first.width}px`);
    layer.style.setProperty("--fan", pile.style.getPropertyValue("--fan") || `${Math.round(first.width * 0.36)}px`);
    for (const c of moving) {
      const copy = c.cloneNode(true);
      copy.classList.remove("picked", "last");
      layer.append(copy);
      c.classList.add("lifted");
    }
    layer.style.left = `${first.left}px`;
    layer.style.top = `${first.top}px`;
    document.body.append(layer);
    try {
      this.root.setPointerCapture(e.pointerId);
    } catch (err) {
      /* not capturable: fine */
    }
    this.drag = { layer, dx: press.x - first.left, dy: press.y - first.top, from: press.id, n: press.n };
    this.moveDrag(e.clientX, e.clientY);
  }

  moveDrag(x, y) {
    const d = this.drag;
    d.x = x;
    d.y = y;
    d.layer.style.left = `${x - d.dx}px`;
    d.layer.style.top = `${y - d.dy}px`;
    const over = this.pileAt(x, y);
    for (const [id, pile] of this.piles) pile.classList.toggle("over", id === over);
    this.edgeScroll();
  }

  // A card held near the window's top or bottom edge scrolls the page until it leaves the
  // edge or the page ends, so a pile off screen can still be reached: on a phone Chinese
  // FreeCell and Barricade A are taller than the screen, and a touch that starts on a card it
  // can drag drags it rather than scrolling (touch-action: none).
  edgeScroll() {
    const d = this.drag;
    if (!d || d.scrolling) return;
    const step = () => {
      if (this.drag !== d) return;
      const speed = d.y < EDGE_PX ? -EDGE_STEP_PX : d.y > window.innerHeight - EDGE_PX ? EDGE_STEP_PX : 0;
      const before = window.scrollY;
      if (speed) window.scrollBy(0, speed);
      if (!speed || window.scrollY === before) {
        d.scrolling = false;
        return;
      }
      this.moveDrag(d.x, d.y); // the piles moved under the held card
      requestAnimationFrame(step);
    };
    d.scrolling = true;
    requestAnimationFrame(step);
  }

  // The pile under the pointer; else the highlighted target the dragged card covers most.
  pileAt(x, y) {
    const hit = document.elementFromPoint(x, y);
    const pileEl = hit && hit.closest("[data-pile]");
    if (pileEl && this.root.contains(pileEl)) return pileEl.dataset.pile;
    if (!this.drag) return null;
    const r = this.drag.layer.getBoundingClientRect();
    let best = null;
    let bestArea = 0;
    for (const [id, pile] of this.piles) {
      if (!pile.classList.contains("target")) continue;
      const p = pile.getBoundingClientRect();
      const w = Math.min(r.right, p.right) - Math.max(r.left, p.left);
      const h = Math.min(r.bottom, p.bottom) - Math.max(r.top, p.top);
      if (w > 0 && h > 0 && w * h > bestArea) {
        best = id;
        bestArea = w * h;
      }
    }
    return best;
  }

  endDrag(x, y) {
    const d = this.drag;
    const target = this.pileAt(x, y);
    this.cancelDrag();
    if (target && target !== d.from) {
      this.send(d.from, target, d.n);
    } else {
      this.cancel();
    }
  }

  cancelDrag() {
    if (!this.drag) return;
    this.drag.layer.remove();
    this.drag = null;
    this.root.querySelectorAll(".lifted").forEach((c) => c.classList.remove("lifted"));
    this.root.querySelectorAll(".over").forEach((p) => p.classList.remove("over"));
  }

  // ---- keyboard --------------------------------------------------------------------------

  keyDown(e) {
    const pileEl = e.target.closest && e.target.closest("[data-pile]");
    if (!pileEl) return;
    const id = pileEl.dataset.pile;
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      const why = this.picked ? null : this.nothingToPick(id);
      if (why) {
        this.onMessage(why); // a key that did nothing said nothing, where a click shows no pick
        return;
      }
      if (this.sequences && this.picked && this.picked.pile === id) {
        // Enter again on the picked pile takes more cards: the next count some legal move
        // takes (one to three may have no move where four has one); past the last, it cancels.
        const bigger = this.nextCount(id, this.picked.n);
        if (bigger) this.pick(id, bigger);
        else this.cancel();
        return;
      }
      this.activate(id, 1);
    } else if (e.key === "f" || e.key === "F") {
      e.preventDefault();
      this.toFoundation(id);
    } else if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      const order = [...this.piles.keys()];
      const i = order.indexOf(id);
      const step = e.key === "ArrowRight" ? 1 : -1;
      this.piles.get(order[(i + step + order.length) % order.length]).focus();
    } else if (e.key === "ArrowUp" || e.key === "ArrowDown") {
      e.preventDefault();
      const next = this.pileAbove(pileEl, e.key === "ArrowDown");
      if (next) next.focus();
    }
  }

  // The pile in the row above (or below) as laid out on screen, nearest the same column: the
  // foundations and cells from the tableau, the second tableau row on a phone.
  pileAbove(from, below = false) {
    const a = from.getBoundingClientRect();
    const ax = a.left + a.width / 2;
    // With the top row's piles beside the tableau, up and down stay in the pile's own column:
    // nearest by rows, Down from the tableau's top went to the waste in the side column.
    const ownColumn = this.root.classList.contains("side-piles");
    let best = null;
    let bestScore = Infinity;
    for (const pile of this.piles.values()) {
      const b = pile.getBoundingClientRect();
      const dy = b.top - a.top;
      if (below ? dy <= 4 : dy >= -4) continue;
      if (ownColumn && (b.right <= a.left || b.left >= a.right)) continue;
      const score = Math.abs(dy) * 4 + Math.abs(b.left + b.width / 2 - ax); // nearest row first
      if (score < bestScore) {
        best = pile;
        bestScore = score;
      }
    }
    return best;
  }
}

function el(tag, cls) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  return node;
}

function caption(text) {
  const c = el("span", "caption");
  c.textContent = text;
  c.setAttribute("aria-hidden", "true"); // the pile's label names it already
  return c;
}

function badge(count) {
  const b = el("span", "badge");
  b.textContent = String(count);
  b.setAttribute("aria-hidden", "true");
  return b;
}
