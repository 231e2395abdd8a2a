// Players: a profile (GET /api/users/{name}) and the all-time boards
// (GET /api/leaderboards/{variant}). Both are plain reads of the public API.

import { get, serverNow } from "./api.js";
import { boardConn, showBoardConn } from "./leaderboard.js";
import { ReconnectingSocket } from "./socket.js";
import { formatSeconds, h, plural, statusText, variantName } from "./ui.js";

const PAGE_SIZE = 20;
// The all-time page asks for the new day this long after midnight UTC (the server's own watch
// wakes a second after it: games.day_end.GRACE_SECONDS), and again this often until it has it.
const NEXT_DAY_GRACE_MS = 3_000;
const NEXT_DAY_RETRY_MS = 15_000;
const NEXT_DAY_SPREAD_MS = 5_000;

export function profileLink(username, text = username) {
  return h("a", { href: `#/players/${encodeURIComponent(username)}`, "data-testid": "profile-link" }, text);
}

// A par ratio as players read it: 100 % matched the solver's line (a win in par moves, or as
// many cards home as the solver on a deal it could not win); above 100 % beat it.
function ratioText(ratio) {
  return ratio ? `${Math.round(ratio * 100)} %` : "–";
}

// A table in a box of its own width: on a narrow phone a wide one scrolls inside it, and the
// page does not.
function table(testid, head, rows, empty) {
  return h("div", { class: "scroll-x" }, h("table", { class: "records", "data-testid": testid },
    h("thead", {}, h("tr", {}, head.map((th) => h("th", {}, th)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: head.length, class: "muted" }, empty)))));
}

export async function renderProfile(root, username, { variants, me }) {
  const p = await get(`/api/users/${encodeURIComponent(username)}`);
  const isMe = me && me.username.toLowerCase() === p.username.toLowerCase();
  const joined = new Date(p.date_joined).toISOString().slice(0, 10);
  const summary = [plural(p.played, "game"), `${p.won} won`];
  if (p.best_streak) summary.push(`daily streak ${p.current_streak} (best ${p.best_streak})`);
  const order = variants.map((v) => v.id);
  const games = order.filter((id) => p.variants[id]).map((id) => h("tr", {},
    h("td", {}, variantName(variants, id)),
    h("td", {}, String(p.variants[id].played)),
    h("td", {}, String(p.variants[id].won))));
  const daily = order.filter((id) => p.daily[id]).map((id) => {
    const d = p.daily[id];
    return h("tr", {},
      // Named for where each goes: a screen reader's list of links had two "Countess", this
      // board's and a recent game's.
      h("td", {}, h("a", { href: `#/leaderboards/${id}`, "aria-label": `${variantName(variants, id)}: all-time board` }, variantName(variants, id))),
      h("td", {}, String(d.played)),
      h("td", {}, String(d.wins)),
      h("td", {}, ratioText(d.best_par_ratio)),
      h("td", {}, String(d.current_streak)),
      h("td", {}, String(d.best_streak)));
  });
  const recent = p.recent.map((r) => h("tr", { "data-testid": "recent-row" },
    h("td", { class: "nowrap" }, r.date),
    h("td", {}, h("a", { href: isMe ? `#/play/${r.game_id}` : `#/watch/${r.game_id}`, "aria-label": `${variantName(variants, r.variant)}, ${r.date}: ${isMe ? "open the game" : "watch the game"}` }, variantName(variants, r.variant))),
    h("td", {}, r.status === "won" ? "Won \u2713" : r.day_over ? "Open at day's end" : statusText(r.status)),
    h("td", {}, String(r.foundation_cards)),
    h("td", {}, String(r.moves)),
    h("td", {}, formatSeconds(r.seconds))));
  root.replaceChildren(h("section", { class: "panel profile", "data-testid": "profile", "data-username": p.username },
    h("div", { class: "section-head" },
      h("h2", {}, p.username, isMe ? h("span", { class: "tag" }, "you") : null),
      h("span", { class: "muted small" }, `joined ${joined}`,
        // Your account page, where a phone's header has no room for the name that leads there.
        isMe ? [" · ", h("a", { href: "#/account", "data-testid": "account-link" }, "Account")] : null)),
    h("p", { "data-testid": "profile-summary" }, summary.join(" · ")),
    h("div", { class: "columns" },
      h("div", {}, h("h3", {}, "Games"), table("profile-games", ["Game", "Played", "Won"], games, "No games yet.")),
      h("div", {}, h("h3", {}, "Daily challenges"),
        table("profile-daily", ["Game", "Played", "Won", "Best par", "Streak", "Best"], daily, "No ranked attempt yet."))),
    h("h3", {}, "Recent ranked attempts"),
    table("profile-recent", ["Day", "Game", "Result", "Cards", "Moves", "Time"], recent, "None yet.")));
}

// The all-time board of one game, one page of it, kept live: a record changes when a ranked
// attempt is counted, that is when one finishes, and then today's board of the game changes
// too. So the page listens to that board's socket (`/ws/leaderboards/{today}/{variant}`) and
// reads its own page again on each of its frames. At midnight UTC (the server's clock) it
// moves to the new day's board, and reads its page again: the attempts left open are counted
// then, and the server pushes the new day's boards once it has counted them
// (games.day_end.close_days). `today`: the date, or a promise of it (null: not live).
// Returns the view, whose destroy() closes the socket and stops the wait for midnight.
export async function renderAllTime(root, variantId, page, { variants, me, today }) {
  const variant = variants.find((v) => v.id === variantId) || variants[0];
  const url = `/api/leaderboards/${variant.id}?page=${page}&page_size=${PAGE_SIZE}`;
  const tabs = h("nav", { class: "tabs", "aria-label": "Games" }, variants.map((v) => h("a", {
    href: `#/leaderboards/${v.id}`, class: v.id === variant.id ? "active" : "", "aria-current": v.id === variant.id ? "page" : null,
  }, v.name)));
  const countEl = h("span", { class: "muted small", "data-testid": "alltime-total" });
  const connEl = boardConn();
  const boardBox = h("div", { class: "leaderboard flat" });
  const pagerBox = h("div");
  const draw = (board) => {
    const pages = Math.max(1, Math.ceil(board.total / board.page_size));
    const rows = board.entries.map((e) => h("tr", { class: me && e.username === me.username ? "me" : "", "data-testid": "alltime-row", "data-username": e.username },
      h("td", {}, String(e.rank)),
      h("td", { class: "who" }, h("span", { class: "name", title: e.username }, profileLink(e.username))),
      h("td", {}, String(e.wins)),
      h("td", {}, String(e.played)),
      h("td", {}, ratioText(e.best_par_ratio)),
      h("td", {}, String(e.longest_streak))));
    const link = (n, text) => (n >= 1 && n <= pages
      ? h("a", { class: "button small", href: `#/leaderboards/${variant.id}?page=${n}` }, text)
      : h("span", { class: "button small disabled", "aria-disabled": "true" }, text));
    countEl.textContent = plural(board.total, "player");
    boardBox.replaceChildren(
      table("alltime-board", ["#", "Player", "Wins", "Played", "Best par", "Longest streak"], rows, "Nobody has played a ranked attempt yet."));
    pagerBox.replaceChildren(...(pages > 1 ? [h("p", { class: "row pager" }, link(board.page - 1, "\u2190 Previous"), h("span", { class: "muted small" }, `page ${board.page} of ${pages}`), link(board.page + 1, "Next \u2192"))] : []));
  };
  draw(await get(url));
  root.replaceChildren(h("section", { class: "panel", "data-testid": "alltime" },
    h("div", { class: "section-head" }, h("h2", {}, "All-time leaderboards"), h("span", { class: "row" }, countEl, connEl)),
    tabs,
    h("p", { class: "muted small" }, `${variant.name}: daily challenges won, then the best par ratio (100 % matched the solver's line), then the longest streak of days played.`),
    boardBox, pagerBox));
  // One read at a time; a change during a read asks for one more after it.
  let reading = null;
  let again = false;
  const reread = async () => {
    if (reading) {
      again = true;
      return;
    }
    reading = get(url).then(draw, () => { /* keep what is shown; the next change tries again */ });
    await reading;
    reading = null;
    if (again) {
      again = false;
      reread();
    }
  };
  let socket = null;
  let gone = false;
  let timer = null;
  const follow = (day) => {
    if (socket) socket.close();
    socket = new ReconnectingSocket(`/ws/leaderboards/${day}/${variant.id}`, {
      // Every frame, the first included: the board was read before the socket opened, and a
      // reconnect's first frame may follow changes made while it was down.
      onframe: (f) => {
        if (f.t === "leaderboard") reread();
      },
      onstatus: (status, info) => showBoardConn(connEl, status, info),
    });
    // The next day, asked of the server a little after its midnight; asked again until it
    // says so (this browser's clock, set by the server's Date header, is right to a second).
    const untilMidnight = (now) => 86_400_000 - (now % 86_400_000);
    const next = async () => {
      timer = null;
      let date = null;
      try {
        date = (await get("/api/daily")).date;
      } catch (err) { /* the server is away: ask again below */ }
      if (gone) return;
      if (date && date !== day) follow(date);
      else timer = setTimeout(next, NEXT_DAY_RETRY_MS);
    };
    // Spread over a few seconds: every open page asks at once otherwise.
    timer = setTimeout(next, untilMidnight(serverNow()) + NEXT_DAY_GRACE_MS + Math.random() * NEXT_DAY_SPREAD_MS);
  };
  // Today's date comes from GET /api/daily, which may be making the day's challenges: the
  // board is shown without waiting for it, and without live updates if it fails.
  Promise.resolve(today).then((day) => {
    if (gone) return;
    if (!day) {
      connEl.hidden = true;
      return;
    }
    follow(day);
  });
  return {
    destroy: () => {
      gone = true;
      clearTimeout(timer);
      if (socket) socket.close();
    },
  };
}
