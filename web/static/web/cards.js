// Cards and moves: parsing, naming, drawing (DOM + inline SVG suit symbols), and applying a
// move to a state the way the server would, for the optimistic update of the screen.

export const SUITS = { C: "Clubs", D: "Diamonds", H: "Hearts", S: "Spades" };
export const SUIT_CHAR = { C: "\u2663", D: "\u2666", H: "\u2665", S: "\u2660" };
export const RANKS = {
  A: "Ace", 2: "2", 3: "3", 4: "4", 5: "5", 6: "6", 7: "7", 8: "8", 9: "9", T: "10",
  J: "Jack", Q: "Queen", K: "King",
};
const RANK_SHORT = { T: "10" };

export function rankLabel(code) {
  const r = code[0];
  return RANK_SHORT[r] || r;
}

export function cardName(code) {
  return `${RANKS[code[0]] || code[0]} of ${SUITS[code[1]] || code[1]}`;
}

// The server's messages name cards by code ("3H does not go on KH"): say them as the table does.
export function cardNames(text) {
  return text.replace(/\b([A2-9TJQK])([SHDC])\b/g, (code) => cardName(code));
}

// A refusal as a player reads it: card names spelled out, piles named as the table names them
// ("t0" is "Tableau 1"), and without the rule's number in RULES.md ("(P2)"), which an API
// client may look up but a player has no use for.
export function refusalText(text) {
  return cardNames(text)
    .replace(/\b([tfc])(\d{1,2})\b/g, (id) => pileLabel(id))
    .replace(/\s*\([A-Z]{1,3}\d{1,2}[a-z]?\)/g, "");
}

// What a player is told of a refusal: a version the game has moved past (another tab or
// device played, or the server took a move this screen has not heard of yet) said in words,
// not in versions; anything else as the server says it.
export function refusalMessage(d) {
  if (d.code === "stale_version") return "The game changed in another window or device: your move was not played. Here is the game as it stands.";
  return refusalText(d.detail || d.code || "The server refused that.");
}

export function isRed(code) {
  return code[1] === "D" || code[1] === "H";
}

const RANK_ORDER = "A23456789TJQK";

// Whether `cards` (bottom to top) are a sequence Chinese FreeCell moves as a unit (RULES F4):
// each card one rank lower than, and of another suit than, the one beneath it.
export function isSequence(cards) {
  for (let k = 1; k < cards.length; k++) {
    const below = cards[k - 1];
    const card = cards[k];
    if (RANK_ORDER.indexOf(below[0]) !== RANK_ORDER.indexOf(card[0]) + 1 || below[1] === card[1]) return false;
  }
  return true;
}

// "t2-t7:3" -> {from:"t2", to:"t7", n:3}; "draw" -> {draw:true}
export function parseMove(move) {
  if (move === "draw") return { draw: true, move };
  const m = /^([a-z]+\d*)-([a-z]+\d*)(?::(\d+))?$/.exec(move);
  if (!m) return null;
  return { from: m[1], to: m[2], n: m[3] ? Number(m[3]) : 1, move };
}

export function moveString(from, to, n = 1) {
  return n >= 2 ? `${from}-${to}:${n}` : `${from}-${to}`;
}

export function pileLabel(id) {
  if (id === "stock") return "Stock";
  if (id === "waste") return "Waste";
  const kind = { t: "Tableau", f: "Foundation", c: "Free cell" }[id[0]];
  return `${kind} ${Number(id.slice(1)) + 1}`;
}

// "t10-t0" -> "9 of Clubs from Tableau 11 to Tableau 1", for people.
// `after`, the state the move made (when known), says what it turned up: the card a draw put
// on the waste, the one a stock play uncovered (Barricade A), which the player would otherwise
// have to go and look for after every such move.
export function describeMove(state, move, after = null) {
  const p = parseMove(move);
  if (!p) return move;
  if (p.draw) {
    const drawn = after && after.waste && after.waste[after.waste.length - 1];
    return drawn ? `Drew ${cardName(drawn)}` : "Draw a card from the stock";
  }
  const cards = pileCards(state, p.from);
  const first = cards[cards.length - p.n];
  const what = first ? (p.n > 1 ? `${p.n} cards from ${cardName(first)}` : cardName(first)) : "the card";
  const shows = p.from === "stock" && after && after.stock && after.stock.top;
  return `${what}: ${pileLabel(p.from)} to ${pileLabel(p.to)}${shows ? `; ${cardName(shows)} shows on the stock` : ""}`;
}

// What an undo took back, from the state before it (`before`, whose last move it undid) and the
// state it made: the undone move in words, or only that one was, where that is not known (two
// undos in a row).
export function describeUndo(before, after) {
  const undone = before && before.last_move;
  return undone && undone !== "undo" ? `Undone: ${describeMove(after, undone, before)}` : "Last move undone";
}

// The cards of one pile, bottom to top (stock: only its face-up top, if any).
export function pileCards(state, id) {
  if (id === "stock") return state.stock && state.stock.top ? [state.stock.top] : [];
  if (id === "waste") return state.waste || [];
  const i = Number(id.slice(1));
  if (id[0] === "t") return state.tableau[i] || [];
  if (id[0] === "f") return state.foundations[i] || [];
  if (id[0] === "c") return state.cells[i] ? [state.cells[i]] : [];
  return [];
}

// The top `n` cards of pile `id`, as one string: what a move or a pick takes, to tell later
// whether the same cards are still there.
export function topCards(state, id, n) {
  return pileCards(state, id).slice(-n).join(" ");
}

function clone(state) {
  return JSON.parse(JSON.stringify(state));
}

// The state after `move`, as far as the client can know it; null if it cannot tell.
export function applyMove(state, move) {
  const p = parseMove(move);
  if (!p || p.draw) return null;
  const s = clone(state);
  let cards;
  const i = Number(p.from.slice(1));
  if (p.from === "waste") {
    if (!s.waste.length) return null;
    cards = [s.waste.pop()];
  } else if (p.from === "stock") {
    if (!s.stock.top) return null;
    cards = [s.stock.top];
    s.stock = { count: Math.max(0, s.stock.count - 1), top: null, unknown: s.stock.count > 1 };
  } else if (p.from[0] === "t") {
    const pile = s.tableau[i];
    if (!pile || pile.length < p.n) return null;
    cards = pile.splice(pile.length - p.n, p.n);
  } else if (p.from[0] === "c") {
    if (!s.cells[i]) return null;
    cards = [s.cells[i]];
    s.cells[i] = null;
  } else {
    return null;
  }
  const j = Number(p.to.slice(1));
  if (p.to[0] === "t" && s.tableau[j]) s.tableau[j].push(...cards);
  else if (p.to[0] === "f" && s.foundations[j]) s.foundations[j].push(...cards);
  else if (p.to[0] === "c" && j < s.cells.length) s.cells[j] = cards[0];
  else return null;
  s.moves = (s.moves || 0) + 1;
  s.last_move = move;
  s.legal_moves = []; // unknown until the server answers
  return s;
}

const svgNS = "http://www.w3.org/2000/svg";

export function suitIcon(suit, cls) {
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("class", cls);
  svg.setAttribute("viewBox", "0 0 100 100");
  svg.setAttribute("aria-hidden", "true");
  const use = document.createElementNS(svgNS, "use");
  use.setAttribute("href", `#suit-${suit}`);
  svg.appendChild(use);
  return svg;
}

export function cardElement(code, index) {
  const el = document.createElement("div");
  el.className = `card face ${isRed(code) ? "red" : "black"}`;
  el.dataset.card = code;
  el.dataset.index = String(index);
  el.setAttribute("aria-label", cardName(code));
  el.setAttribute("role", "img");
  const corner = document.createElement("span");
  corner.className = "corner";
  const rank = document.createElement("span");
  rank.className = "rank";
  rank.textContent = rankLabel(code);
  corner.append(rank, suitIcon(code[1], "suit"));
  const pip = suitIcon(code[1], "pip");
  const foot = document.createElement("span");
  foot.className = "foot";
  foot.textContent = rankLabel(code);
  el.append(corner, pip, foot);
  return el;
}

export function backElement(label = "Face-down card") {
  const el = document.createElement("div");
  el.className = "card back";
  el.setAttribute("aria-label", label);
  el.setAttribute("role", "img");
  return el;
}
