// Solitaire Arena browser client: a hash router and its views.
//
//   #/                 lobby: today's five challenges, live games, your games
//   #/signin           sign in / create an account
//   #/practice         start a practice game by variant and deal number
//   #/daily/{variant}  today's ranked attempt, with the live leaderboard beside it
//   #/play/{id}        a game (yours: play it; someone else's: watch it)
//   #/watch/{id}       a game, read-only
//   #/replay/{id}      a game's replay, from the deal to where it stands
//   #/players/{name}   a player's profile: games, daily results, recent ranked attempts
//   #/leaderboards/{variant}?page=N   the all-time board of one game
//   #/account          your account: change the password
//
// Everything goes through the public API (api.js, socket.js); nothing here is private to
// this server, so the client doubles as the reference for anyone writing another one.

import { ApiError, get, post, tellOtherTabsSignedOut } from "./api.js";
import { GameView } from "./game.js";
import { Leaderboard } from "./leaderboard.js";
import { profileLink, renderAllTime, renderProfile } from "./players.js";
import { ReplayView } from "./replay.js";
import { oneRowWidth } from "./table.js";
import { formatSeconds, h, modal, plural, statusText, toast, variantName } from "./ui.js";

const app = {
  me: null,
  today: null, // the server's UTC date, from GET /api/daily
  watchAfterAttempt: false, // whether today's games open to watch only after your attempt (idem)
  variants: null,
  view: null, // {destroy()}
  after: "#/", // where to go after signing in
};
window.__arena = app; // for debugging and the end-to-end tests

const main = document.getElementById("main");
const userBox = document.getElementById("user");

async function variants() {
  if (!app.variants) app.variants = await get("/api/variants");
  return app.variants;
}

async function variantInfo(id) {
  return (await variants()).find((v) => v.id === id);
}

// What every GET /api/daily tells beside the challenges: the server's date, and its rule on
// watching today's games.
function learnDay(daily) {
  app.today = daily.date;
  app.watchAfterAttempt = !!daily.watch_after_own_attempt;
  return daily;
}

async function loadMe() {
  try {
    app.me = await get("/api/me");
  } catch (err) {
    if (!(err instanceof ApiError) || (err.status !== 401 && err.status !== 403)) throw err;
    app.me = null;
  }
  renderUser();
}

function renderUser() {
  if (!app.me) {
    userBox.replaceChildren(h("a", { href: "#/signin", class: "button quiet" }, "Sign in"));
    return;
  }
  const out = h("button", { type: "button", class: "quiet", "data-testid": "signout" }, "Sign out");
  out.addEventListener("click", async () => {
    // Signed out here before the request: the server closes this page's sockets (4401) as it
    // signs out, which must not read as a session lost elsewhere (arena:signed-out), to come
    // back to after the next sign-in, maybe someone else's, watching this player's game.
    app.me = null;
    app.after = "#/";
    if (app.view && app.view.destroy) app.view.destroy();
    app.view = null;
    try {
      await post("/api/auth/logout");
    } catch (err) {
      /* signed out anyway */
    }
    tellOtherTabsSignedOut();
    renderUser();
    location.hash = "#/signin";
  });
  // The name opens the account page (the password is changed there).
  userBox.replaceChildren(h("a", { href: "#/account", class: "whoami", "data-testid": "whoami", title: `Signed in as ${app.me.username}` }, app.me.username), out);
}

function errorBox(err) {
  const text = err instanceof ApiError ? err.detail : String(err && err.message ? err.message : err);
  return h("p", { class: "error", role: "alert", "data-testid": "error" }, text);
}

function setView(view, ...nodes) {
  main.replaceChildren(...nodes);
  app.view = view;
}

// ---- routing ------------------------------------------------------------------------------

async function route() {
  if (app.view && app.view.destroy) app.view.destroy();
  app.view = null;
  const hash = location.hash || "#/";
  // "#/practice?variant=countess": the query is the view's to read, not part of its name.
  const parts = hash.replace(/^#\/?/, "").split("?")[0].split("/").filter(Boolean);
  const [name, arg] = parts;
  document.querySelectorAll("nav a").forEach((a) => {
    const here = a.getAttribute("href").split("/")[1] === (name || "");
    a.classList.toggle("active", here);
    if (here) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  const token = (route.token = {});
  main.replaceChildren(h("p", { class: "muted loading" }, "Loading…"));
  try {
    if (name === "signin") return await signinView();
    if (!app.me) {
      app.after = hash;
      document.querySelectorAll("nav a.active").forEach((a) => {
        a.classList.remove("active");
        a.removeAttribute("aria-current");
      });
      return await signinView();
    }
    if (!name) return await lobbyView(token);
    if (name === "practice") return await practiceView(token);
    if (name === "daily" && arg) return await dailyView(arg, token);
    if ((name === "play" || name === "watch") && /^[1-9][0-9]*$/.test(arg || "")) return await gameView(Number(arg), name === "watch", token);
    if (name === "replay" && /^[1-9][0-9]*$/.test(arg || "")) return await replayView(Number(arg), token);
    if (name === "players" && arg) return await playerView(decodeURIComponent(arg), token);
    if (name === "leaderboards") return await allTimeView(arg, token);
    if (name === "account") return accountView();
    setView(null, h("section", { class: "panel" }, h("h2", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Back to the lobby"))));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      app.me = null;
      renderUser();
      app.after = hash;
      return signinView();
    }
    if (route.token === token) setView(null, h("section", { class: "panel" }, errorBox(err), h("p", {}, h("a", { href: "#/" }, "Back to the lobby"))));
  } finally {
    if (route.token === token) announceView();
  }
}

// A new view is named in the window's title, and takes the focus where the old one had it
// (the link that was clicked is gone): a screen reader then reads where the player is. A
// field of the view that took the focus itself keeps it.
function announceView() {
  const heading = main.querySelector("h2");
  const name = heading ? heading.textContent.trim() : "";
  document.title = name ? `${name} · Solitaire Arena` : "Solitaire Arena";
  if (heading && !main.contains(document.activeElement)) {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: true });
  }
}

// The server's rules for a new password (settings.AUTH_PASSWORD_VALIDATORS), said up front.
const PASSWORD_RULES = "At least 8 characters, not all digits, not only spaces, not a common password, not like your username.";

// ---- sign in / sign up --------------------------------------------------------------------

// Changing the password signs out everywhere (the server ends the token, every session and
// every socket of the user): the page then goes to the sign-in form, to sign in with the new
// one. The new password is held to the server's rules up front, as at sign-up.
function accountView() {
  const current = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true, "data-testid": "account-password" });
  const fresh = h("input", { name: "new_password", type: "password", autocomplete: "new-password", required: true, minlength: 8, "aria-describedby": "new-password-hint", "data-testid": "account-new-password" });
  const hint = h("p", { class: "muted field-hint", id: "new-password-hint" },
    PASSWORD_RULES);
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "account-submit" }, "Change password");
  const err = h("div", { "data-testid": "account-error" });
  const form = h("form", { class: "panel auth account", "data-testid": "account-form" },
    h("h2", {}, "Your account"),
    h("p", {}, "Signed in as ", profileLink(app.me.username), "."),
    h("h3", {}, "Change password"),
    h("p", { class: "muted" }, "This signs you out everywhere: your other tabs and devices, and any app using your API token. Then sign in with the new password."),
    h("label", {}, "Current password", current),
    h("label", {}, "New password", fresh),
    hint, err, submit);
  form.addEventListener("input", () => err.replaceChildren());
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.replaceChildren();
    submit.disabled = true;
    submit.textContent = "Changing password…";
    try {
      await post("/api/auth/password", { password: current.value, new_password: fresh.value });
    } catch (ex) {
      err.replaceChildren(errorBox(ex));
      submit.disabled = false;
      submit.textContent = "Change password";
      return;
    }
    app.signedOutAs = app.me.username; // the sign-in form starts with the name
    app.me = null;
    app.after = "#/";
    tellOtherTabsSignedOut();
    renderUser();
    toast("Password changed: sign in with your new password.");
    location.hash = "#/signin";
  });
  setView(null, form);
}

async function signinView() {
  let mode = "signin";
  const user = h("input", { name: "username", autocomplete: "username", required: true, "data-testid": "auth-username", maxlength: 150 });
  const pass = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true, "data-testid": "auth-password" });
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "auth-submit" }, "Sign in");
  // The server's rules for a new password (settings.AUTH_PASSWORD_VALIDATORS), said up front.
  const passHint = h("p", { class: "muted field-hint", id: "password-hint", hidden: true },
    PASSWORD_RULES);
  // And a new name's (accounts/serializers.py), said up front, not only in a refusal; the
  // same words are the field's title, which the browser shows when the pattern refuses it.
  const nameRules = "3–30 characters: letters, digits, _ . or -";
  const userHint = h("p", { class: "muted field-hint", id: "username-hint", hidden: true }, nameRules);
  const title = h("h2", {}, "Sign in");
  const err = h("div", { "data-testid": "auth-error" });
  const toggle = h("button", { type: "button", class: "link", "data-testid": "auth-toggle" }, "New here? Create an account");
  // Opened while signed in (a bookmark, the back button): say so, since signing in here
  // switches to another account rather than doing nothing.
  const current = app.me
    ? h("p", { class: "muted", "data-testid": "auth-current" },
      "You are signed in as ", profileLink(app.me.username),
      ". Signing in here switches to another account; ", h("a", { href: "#/" }, "back to the lobby"), ".")
    : null;
  const form = h("form", { class: "panel auth", "data-testid": "auth-form" },
    title,
    current,
    h("label", {}, "Username", user),
    userHint,
    h("label", {}, "Password", pass),
    passHint,
    err, submit, toggle);
  const setMode = (m) => {
    mode = m;
    title.textContent = m === "signin" ? "Sign in" : "Create an account";
    submit.textContent = m === "signin" ? "Sign in" : "Create account";
    toggle.textContent = m === "signin" ? "New here? Create an account" : "Have an account? Sign in";
    pass.autocomplete = m === "signin" ? "current-password" : "new-password";
    // A new name, and a new password's length, are checked here as the server checks them;
    // signing in takes any existing one. (The name is sent trimmed, so spaces around it are
    // let through.)
    passHint.hidden = userHint.hidden = m !== "signup";
    if (m === "signup") {
      user.pattern = "\\s*[A-Za-z0-9_.\\-]{3,30}\\s*";
      user.title = nameRules;
      user.setAttribute("aria-describedby", "username-hint");
      pass.minLength = 8;
      pass.setAttribute("aria-describedby", "password-hint");
    } else {
      user.removeAttribute("pattern");
      user.removeAttribute("title");
      user.removeAttribute("aria-describedby");
      pass.removeAttribute("minlength");
      pass.removeAttribute("aria-describedby");
    }
    form.dataset.mode = m;
  };
  setMode("signin");
  if (app.signedOutAs) user.value = app.signedOutAs;
  app.signedOutAs = null;
  toggle.addEventListener("click", () => {
    err.replaceChildren();
    setMode(mode === "signin" ? "signup" : "signin");
  });
  // A refusal speaks of what was sent: once a field changes it may no longer hold, and beside
  // the browser's own check of the new value (which sends nothing) it would contradict it.
  form.addEventListener("input", () => err.replaceChildren());
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.replaceChildren();
    submit.disabled = true;
    const label = submit.textContent;
    // Hashing a password takes the server a moment: say that something is happening.
    submit.textContent = mode === "signup" ? "Creating account…" : "Signing in…";
    const body = { username: user.value.trim(), password: pass.value };
    try {
      if (mode === "signup") await post("/api/auth/register", body);
      await post("/api/auth/login", body); // the session cookie: what the WebSockets ride on
      await loadMe();
      const next = app.after && !app.after.startsWith("#/signin") ? app.after : "#/";
      app.after = "#/";
      if (location.hash === next) route();
      else location.hash = next;
    } catch (ex) {
      err.replaceChildren(errorBox(ex)); // its detail names each field that was refused
    } finally {
      submit.disabled = false;
      submit.textContent = label;
    }
  });
  // The header's "Sign in" link leads here: on this page it is the form itself.
  if (!app.me) userBox.replaceChildren();
  setView(null, h("div", { class: "center" },
    h("section", { class: "intro" },
      h("h1", {}, "Solitaire Arena"),
      h("p", {}, "Five solitaire games, one certified deal of each every day, and a live leaderboard. Practice any deal you like.")),
    form));
  (user.value ? pass : user).focus(); // the name given (after a password change): its password
}

// ---- lobby --------------------------------------------------------------------------------

function attemptLine(a) {
  if (!a) return "Not played yet";
  const parts = [statusText(a.status)];
  if (a.status === "playing") parts.push(`${plural(a.moves, "move")} so far`);
  else {
    parts.push(plural(a.moves, "move"), formatSeconds(a.seconds));
    if (a.rank) parts.push(`rank #${a.rank}`);
  }
  if (a.foundation_cards != null && a.status !== "won") parts.push(`${plural(a.foundation_cards, "card")} up`);
  return parts.join(" · ");
}

async function lobbyView(token) {
  const dailyBox = h("div", { class: "daily-grid", "data-testid": "daily-list" }, h("p", { class: "muted" }, "Loading today's challenges…"));
  const liveBox = h("ul", { class: "list", "data-testid": "live-list" }, h("li", { class: "muted" }, "Loading…"));
  const mineBox = h("ul", { class: "list", "data-testid": "my-games" }, h("li", { class: "muted" }, "Loading…"));
  const dateEl = h("span", { class: "muted nowrap" });
  // The name links to the profile. The link is made once: the stats are redrawn as games end,
  // and a link replaced between a press and its release takes no click.
  const totals = document.createTextNode("");
  const statsEl = h("span", { class: "muted small", "data-testid": "my-stats" }, profileLink(app.me.username), totals);
  const showStats = () => {
    const st = app.me && app.me.stats;
    if (!st) return (totals.textContent = "");
    // `played` counts every game started, practice included; a streak is of days with a
    // ranked attempt played (finished, or open when its day ended).
    // The name leads: on a phone the header has no room for it.
    const parts = [plural(st.played, "game"), `${st.won} won`];
    if (st.best_streak) parts.push(`daily streak ${st.current_streak} (best ${st.best_streak})`);
    totals.textContent = ` · ${parts.join(" · ")}`;
  };
  showStats();
  let timer = null;
  setView({ destroy: () => clearInterval(timer) },
    h("section", { class: "panel" },
      h("div", { class: "section-head" }, h("h2", {}, "Today's challenges ", dateEl), statsEl),
      dailyBox),
    h("div", { class: "columns" },
      h("section", { class: "panel" },
        h("div", { class: "section-head" }, h("h2", {}, "Live games"), h("a", { href: "#/practice", class: "button" }, "New practice game")),
        liveBox),
      h("section", { class: "panel" }, h("h2", {}, "Your games"), mineBox)));

  const vs = await variants();
  // Each part says whether it loaded; one that failed (the server was down) is tried again
  // with the live list, so the lobby comes back by itself.
  const failed = new Set();
  const loadStats = async () => {
    try {
      app.me = await get("/api/me"); // played / won change as games end
      showStats();
      return true;
    } catch (err) {
      return false;
    }
  };
  const loadDaily = async () => {
    try {
      const daily = learnDay(await get("/api/daily"));
      dateEl.textContent = daily.date;
      dailyBox.replaceChildren(...daily.challenges.map((c) => {
        const v = vs.find((x) => x.id === c.variant) || { name: c.name, summary: "" };
        const a = c.attempt;
        const action = !a ? "Play" : a.status === "playing" ? "Resume" : "View";
        return h("a", { class: `daily-card st-${a ? a.status : "new"}`, href: `#/daily/${c.variant}`, "data-testid": `daily-${c.variant}`, "data-status": a ? a.status : "none" },
          h("strong", {}, c.name || v.name),
          h("span", { class: "small muted" }, c.winnable ? `Winnable · par ${c.par_moves} moves` : `Par ${c.par_cards} cards`),
          h("span", { class: "attempt", "data-testid": "attempt" }, attemptLine(a)),
          h("span", { class: "button primary small" }, action));
      }));
      return true;
    } catch (err) {
      dailyBox.replaceChildren(h("p", { class: "muted" }, "Daily challenges are not available: ", err.detail || String(err)));
      return false;
    }
  };
  // The live list is read again every 10 s. A game still listed keeps its element (only its
  // move count changes): a link replaced between a press and its release takes no click.
  const liveItems = new Map(); // game id -> {li, moves}
  const loadLive = async () => {
    try {
      const live = await get("/api/games/live");
      const others = live.filter((g) => g.owner !== app.me.username).slice(0, 20);
      if (!others.length) {
        liveItems.clear();
        liveBox.replaceChildren(h("li", { class: "muted" }, "Nobody else is playing right now."));
        return;
      }
      const items = others.map((g) => {
        let item = liveItems.get(g.id);
        if (!item) {
          const moves = h("span", { class: "muted small" });
          const li = h("li", {},
            h("a", { href: `#/watch/${g.id}`, "data-testid": "watch-link", "data-game-id": g.id },
              `${g.owner} · ${variantName(vs, g.variant)}`),
            moves);
          item = { li, moves };
        }
        // The deal tells two games of one player apart; a daily one's stays secret all day, and
        // so does a practice game's with a face-down stock while it is played (deal: null); two
        // games on one deal, the game's number.
        item.moves.textContent = ` ${g.daily ? "daily" : g.deal ? `deal ${g.deal}` : "practice"} · move ${g.v} · game ${g.id}`;
        return [g.id, item];
      });
      liveItems.clear();
      items.forEach(([id, item]) => liveItems.set(id, item));
      // Moved into order one by one: an element already in place is not taken out.
      items.forEach(([, item], i) => {
        if (liveBox.children[i] !== item.li) liveBox.insertBefore(item.li, liveBox.children[i] || null);
      });
      while (liveBox.children.length > items.length) liveBox.lastElementChild.remove();
    } catch (err) {
      liveItems.clear();
      liveBox.replaceChildren(h("li", { class: "muted" }, "Live games are not available."));
    }
  };
  // Your games, a page at a time: "Older games" asks for the page before the last one shown.
  const MINE_PAGE = 12;
  // When it was started, in the reader's time: two practice games of one deal differ only there.
  const startedAt = (g) => new Date(g.started_at).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  const mineItem = (g) => h("li", {},
    h("a", { href: `#/play/${g.id}` }, variantName(vs, g.variant),
      g.daily ? ` · daily ${g.daily.date}${g.daily.ranked ? "" : " (practice)"}` : g.deal ? ` · deal ${g.deal}` : ""),
    h("span", { class: "muted small", "data-testid": "my-game-line" }, ` ${statusText(g.status)} · ${plural(g.v, "move")} · ${startedAt(g)}`));
  // A page is asked for with one game more than it shows: that one says whether there are older.
  const page = (games) => games.slice(0, MINE_PAGE).map(mineItem).concat(moreItem(games));
  const moreItem = (games) => {
    if (games.length <= MINE_PAGE) return [];
    const button = h("button", { type: "button", class: "button small", "data-testid": "older-games" }, "Older games");
    const li = h("li", {}, button);
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const older = await get(`/api/games?limit=${MINE_PAGE + 1}&before=${games[MINE_PAGE - 1].id}`);
        li.replaceWith(...page(older));
      } catch (err) {
        button.disabled = false;
        li.replaceChildren(button, errorBox(err));
      }
    });
    return [li];
  };
  const loadMine = async () => {
    try {
      const games = await get(`/api/games?limit=${MINE_PAGE + 1}`);
      mineBox.replaceChildren(...(games.length ? page(games) : [h("li", { class: "muted" }, "No games yet.")]));
      return true;
    } catch (err) {
      mineBox.replaceChildren(h("li", {}, errorBox(err)));
      return false;
    }
  };
  const parts = { stats: loadStats, daily: loadDaily, mine: loadMine };
  const load = async (names) => {
    const ok = await Promise.all(names.map((n) => parts[n]()));
    names.forEach((n, i) => (ok[i] ? failed.delete(n) : failed.add(n)));
  };
  await Promise.all([load(Object.keys(parts)), loadLive()]);
  if (route.token !== token) return;
  timer = setInterval(() => {
    if (route.token !== token) return;
    loadLive();
    if (failed.size) load([...failed]);
  }, 10000);
  dailyBox.dataset.refresh = "on"; // tests wait for it: the first loads end in any order
}

// ---- players ------------------------------------------------------------------------------

async function playerView(username, token) {
  const root = h("div", {});
  const vs = await variants();
  await renderProfile(root, username, { variants: vs, me: app.me });
  if (route.token === token) setView(null, root);
}

async function allTimeView(variantId, token) {
  const vs = await variants();
  const page = Number(new URLSearchParams(location.hash.split("?")[1] || "").get("page")) || 1;
  const root = h("div", {});
  // Today's board, whose changes the page follows (the lobby's date may be a day old); the
  // board itself does not wait for it.
  const today = get("/api/daily").then((d) => learnDay(d).date, () => null);
  const view = await renderAllTime(root, variantId || vs[0].id, Math.max(1, Math.floor(page)), { variants: vs, me: app.me, today });
  if (route.token === token) setView(view, root);
  else view.destroy(); // the reader went on meanwhile
}

// ---- practice -----------------------------------------------------------------------------

async function practiceView() {
  const vs = await variants();
  const select = h("select", { "data-testid": "practice-variant", name: "variant" },
    vs.map((v) => h("option", { value: v.id }, v.name)));
  const deal = h("input", { type: "number", min: 1, max: Number.MAX_SAFE_INTEGER, step: 1, placeholder: "random", "data-testid": "practice-deal", name: "deal", inputmode: "numeric" });
  const start = h("button", { type: "submit", class: "primary", "data-testid": "practice-start" }, "Deal");
  const rules = h("div", { class: "rules" });
  const err = h("div");
  const showRules = () => {
    const v = vs.find((x) => x.id === select.value);
    rules.replaceChildren(h("p", {}, h("strong", {}, v.summary)), h("ul", {}, v.rules.map((r) => h("li", {}, r))));
  };
  const want = new URLSearchParams(location.hash.split("?")[1] || "").get("variant");
  if (want) select.value = want;
  select.addEventListener("change", showRules);
  showRules();
  const form = h("form", { class: "panel", "data-testid": "practice-form" },
    h("h2", {}, "Practice"),
    h("p", { class: "muted" }, "Any deal of any game, unranked. Leave the deal empty for a random one; the same number always gives the same deal."),
    h("div", { class: "row" }, h("label", { class: "wide" }, "Game", select), h("label", { class: "narrow" }, "Deal number", deal), start),
    err, rules);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.replaceChildren();
    start.disabled = true;
    try {
      const body = { variant: select.value };
      if (deal.value) body.deal = Number(deal.value);
      const game = await post("/api/games", body);
      location.hash = `#/play/${game.id}`;
    } catch (ex) {
      err.replaceChildren(errorBox(ex));
    } finally {
      start.disabled = false;
    }
  });
  setView(null, form);
}

// ---- a game, with the result screen and (for a daily) its leaderboard ----------------------

function resultDialog(d, game, variant, view) {
  const readOnly = view.readOnly;
  const won = d.status === "won";
  const title = readOnly
    ? `${game.owner}: ${statusText(d.status).toLowerCase()}`
    : won ? "You won!" : d.status === "stuck" ? "No moves left" : statusText(d.status);
  const closeBtn = h("button", { type: "button", class: "primary", "data-testid": "result-close" }, "Close");
  // Stuck in practice: the move that left no move may be taken back (the server reopens it).
  const undoBtn = view.reopenable({ status: d.status })
    ? h("button", { type: "button", "data-testid": "result-undo" }, "Undo last move") : null;
  // A practice game's next step: another random deal of the same game, dealt at once (it
  // opened the practice form, one more page and press before the next game).
  const newDeal = game.daily || readOnly ? null
    : h("button", { type: "button", "data-testid": "result-new-deal" }, "New deal");
  const dealError = h("div");
  const box = h("div", { class: "dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": "result-title" },
    h("h2", { id: "result-title" }, title),
    h("p", { class: "big" }, won ? `All ${variant.cards} cards home.` : d.foundation_cards != null ? `${d.foundation_cards} of ${variant.cards} cards on the foundations.` : ""),
    h("dl", {},
      h("dt", {}, "Moves"), h("dd", { "data-testid": "result-moves" }, String(d.moves)),
      h("dt", {}, "Time"), h("dd", { "data-testid": "result-time" }, formatSeconds(d.seconds)),
      d.rank ? [h("dt", {}, "Rank"), h("dd", { "data-testid": "result-rank" }, `#${d.rank}`)] : null),
    h("div", { class: "row" }, closeBtn, undoBtn, h("a", { href: `#/replay/${game.id}`, class: "button", "data-testid": "result-replay" }, "Replay"),
      h("a", { href: "#/", class: "button" }, "Lobby"),
      newDeal),
    dealError);
  // Back to the banner that says how the game ended, or the game's heading.
  const fallback = view.bannerEl.hidden ? view.root.querySelector("h2") : view.bannerEl;
  let closed = false;
  const close = modal(box, { testid: "result", status: d.status, fallback, onClose: () => { closed = true; } });
  closeBtn.addEventListener("click", close);
  if (undoBtn) undoBtn.addEventListener("click", () => { close(); view.undo(); });
  if (newDeal) {
    newDeal.addEventListener("click", async () => {
      newDeal.disabled = true;
      dealError.replaceChildren();
      const from = location.hash;
      try {
        const next = await post("/api/games", { variant: game.variant });
        // The player closed the dialog or went elsewhere meanwhile: the new game waits in
        // their list; the page does not pull them to it.
        if (closed || location.hash !== from) return;
        close();
        location.hash = `#/play/${next.id}`;
      } catch (err) {
        dealError.replaceChildren(errorBox(err));
        newDeal.disabled = false;
      }
    });
  }
  closeBtn.focus();
  return close;
}

function mountGame(game, variant, { readOnly = false, extra = [], onFinished = null } = {}) {
  const gameRoot = h("div", { "data-testid": "game" });
  const aside = game.daily ? h("aside", { class: "side" }) : null;
  let board = null;
  let closeDialog = null;
  const layout = h("div", { class: aside ? "with-aside" : "solo" }, h("div", { class: "main-col" }, gameRoot, ...extra), aside);
  // Beside the leaderboard, a game column too narrow for one row of its piles puts the
  // board under the game instead (style.css .with-aside).
  layout.style.setProperty("--game-min", `${oneRowWidth(variant)}px`);
  main.replaceChildren(layout);
  // A game opens at the page's top: started from a daily's intro scrolled down to its button,
  // it opened scrolled as far, its bar and top row off screen, the ranked clock running.
  window.scrollTo(0, 0);
  const view = new GameView(gameRoot, {
    game,
    variant,
    me: app.me,
    readOnly,
    onFinished: (d, { live, view: v }) => {
      if (live && !closeDialog) closeDialog = resultDialog(d, game, variant, v);
      if (onFinished) onFinished(d, live);
    },
    onReopened: () => {
      if (closeDialog) closeDialog();
      closeDialog = null; // a later ending gets its own dialog
    },
  });
  if (aside) {
    board = new Leaderboard(aside, {
      date: game.daily.date, variant: game.variant, me: app.me, today: app.today, watchAfterAttempt: app.watchAfterAttempt,
      onMine: (mine) => view.rankChanged(mine && mine.rank),
    });
  }
  app.view = {
    game: view,
    board,
    destroy() {
      view.destroy();
      if (board) board.destroy();
      if (closeDialog) closeDialog();
    },
  };
  return app.view;
}

async function gameView(id, watch, token) {
  const game = await get(`/api/games/${id}`);
  if (route.token !== token) return;
  const variant = await variantInfo(game.variant);
  const readOnly = watch || game.owner !== app.me.username;
  mountGame(game, variant, { readOnly });
}

async function replayView(id, token) {
  const game = await get(`/api/games/${id}`);
  if (route.token !== token) return;
  const variant = await variantInfo(game.variant);
  const root = h("div", { "data-testid": "replay" });
  setView(null, h("div", { class: "solo" }, h("div", { class: "main-col" }, root)));
  app.view = new ReplayView(root, { game, variant });
  await app.view.load(); // a page it cannot read says why where the move is named
}

async function dailyView(variantId, token) {
  const variant = await variantInfo(variantId);
  if (!variant) throw new ApiError(404, "unknown_variant", `Unknown game '${variantId}'.`);
  const daily = learnDay(await get("/api/daily"));
  if (route.token !== token) return;
  const challenge = daily.challenges.find((c) => c.variant === variantId);
  // Left out of the list while its certification has lately failed (503 on its own URLs).
  if (!challenge) throw new ApiError(503, "unavailable", `Today's ${variant.name} challenge is not available just now: try again in a few minutes.`);
  const date = challenge.date || daily.date;
  const base = `/api/daily/${date}/${variantId}`;

  const practiceButton = () => {
    const b = h("button", { type: "button", "data-testid": "practice-daily" }, "Practice this deal (unranked)");
    b.addEventListener("click", async () => {
      try {
        const g = await post(`${base}/practice`);
        location.hash = `#/play/${g.id}`;
      } catch (err) {
        toast(err.detail || String(err), "error");
      }
    });
    return h("p", { class: "row" }, b);
  };

  const start = async () => {
    const game = await post(`${base}/play`);
    if (route.token !== token) return;
    // From the intro: its board's socket closes with it (the game's board opens its own).
    if (app.view && app.view.destroy) app.view.destroy();
    let offered = false;
    mountGame(game, variant, {
      onFinished: () => {
        // A finished ranked attempt cannot be played again; its deal can, unranked.
        if (offered) return;
        offered = true;
        queueMicrotask(() => main.querySelector(".main-col")?.append(practiceButton()));
      },
    });
  };

  if (challenge.attempt) return start();

  const button = h("button", { type: "button", class: "primary", "data-testid": "start-daily" }, "Start ranked attempt");
  const err = h("div");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await start();
      announceView(); // the game, named and focused as a view the router opens
    } catch (ex) {
      err.replaceChildren(errorBox(ex));
      button.disabled = false;
    }
  });
  const aside = h("aside", { class: "side" });
  setView(null, h("div", { class: "with-aside" },
    h("section", { class: "panel main-col", "data-testid": "daily-intro" },
      h("h2", {}, `${variant.name} · `, h("span", { class: "nowrap" }, date)),
      h("p", {}, variant.summary),
      h("p", { class: "muted" }, challenge.winnable
        ? `This deal is certified winnable; the solver's line takes ${challenge.par_moves} moves.`
        : `The solver brought ${challenge.par_cards} cards home on this deal (${challenge.par_moves} moves). Players rank by cards on the foundations.`),
      h("h3", {}, "How a ranked attempt works"),
      h("ul", { class: "ranked-rules", "data-testid": "ranked-rules" },
        h("li", {}, "One attempt. The clock starts when you start it, and your time runs to your last move."),
        h("li", {}, challenge.winnable
          ? "Ranking: a win first, then more cards on the foundations, then fewer moves, then less time."
          : "Ranking: more cards on the foundations first (this deal is not certified winnable), then fewer moves, then less time."),
        h("li", {}, variant.piles && variant.piles.stock
          ? "Undo is allowed, but it counts as a move. A move to a foundation stays, as does a move that turned a card face up (a draw, or a play from the stock)."
          : "Undo is allowed, but it counts as a move. A move to a foundation stays."),
        h("li", {}, "No hints in a ranked attempt; practice the deal afterwards as often as you like."),
        h("li", {}, "Resigning ends the attempt as it stands, and it still ranks. An attempt left open at midnight UTC counts as it stands.")),
      // The button before the game's rules: on a phone the rules are screens long, and a
      // player who knows them should not have to scroll past them to start.
      err, h("p", { class: "daily-start" }, button),
      h("h3", {}, `The rules of ${variant.name}`),
      h("ul", { class: "rules", "data-testid": "variant-rules" }, variant.rules.map((r) => h("li", {}, r)))),
    aside));
  const board = new Leaderboard(aside, { date, variant: variantId, me: app.me, today: daily.date, watchAfterAttempt: app.watchAfterAttempt });
  app.view = { destroy: () => board.destroy() };
}

// ---- boot ---------------------------------------------------------------------------------

window.addEventListener("hashchange", route);
// Signed out elsewhere (api.js): back to the sign-in form, then to where the user was. A
// view that handled its 401 itself has already cleared `app.me`.
window.addEventListener("arena:signed-out", () => {
  if (!app.me) return;
  app.me = null;
  renderUser();
  route();
});
(async () => {
  try {
    // The page says whether its session is signed in: a signed-out visit need not ask
    // /api/me for the 401 that the browser's console would report as an error.
    if (document.querySelector('meta[name="signed-in"]')?.content === "1") await loadMe();
    else renderUser();
  } catch (err) {
    toast(err.detail || "The server cannot be reached.", "error");
  }
  route();
})();
