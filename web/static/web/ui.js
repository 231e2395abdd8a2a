// Small DOM helpers shared by the views.

// h("a", {href: "#/", class: "x", "data-testid": "y"}, child, "text", ...)
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      node.className = value;
    } else if (value === true) {
      node.setAttribute(key, "");
    } else {
      node.setAttribute(key, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A game's heading: its variant, then its day (a daily deal, "practice" on an unranked copy)
// or its deal number. The date as one word: a narrow screen broke "2026-" from "11-26". Each
// part has its span, so that in the bar's narrow column beside the table (a phone held
// sideways, style.css) the deal or day takes a line of its own under the name, for every game
// alike, not wherever the words wrap.
export function gameTitle(game, variant) {
  const name = h("span", { class: "title-name" }, variant.name);
  const sep = () => h("span", { class: "title-sep" }, " · ");
  if (game.daily) {
    return [name, sep(), h("span", { class: "title-deal" }, "Daily ", h("span", { class: "nowrap" }, game.daily.date),
      ...(game.daily.ranked ? [] : [" (practice)"]))];
  }
  return [name, ...(game.deal ? [sep(), h("span", { class: "title-deal" }, `Deal ${game.deal}`)] : [])];
}

export function formatSeconds(total) {
  const s = Math.max(0, Math.floor(total || 0));
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const seconds = String(s % 60).padStart(2, "0");
  return hours ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}

// "1 move", "2 moves".
export function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

// A game's name from GET /api/variants, or its id where the list does not have it.
export function variantName(variants, id) {
  return (variants.find((v) => v.id === id) || {}).name || id;
}

export function statusText(status) {
  return { playing: "Playing", won: "Won", stuck: "Stuck", resigned: "Resigned" }[status] || status || "";
}

let toastTimer = null;

// A message at the bottom of the screen, outside any view.
export function toast(text, kind = "info") {
  const box = document.getElementById("toast");
  if (!box) return;
  box.textContent = text;
  box.dataset.kind = kind;
  box.classList.add("show");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => box.classList.remove("show"), 5000);
}

// A modal box over the page: closes on its backdrop and on Escape, calling `onClose` once.
// Returns `close`. Shared by the result dialog and the confirmations.
// While it is open the rest of the page is `inert`: Tab stays inside the box, and nothing
// behind it (the header's Sign out, the table's piles and keys) can be reached or pressed.
// Closed, it gives the focus back where it was; where that can no longer take it (the Resign
// button that opened the result is off by then), to `fallback`, not to the page's top.
export function modal(box, { testid = null, status = null, onClose = null, fallback = null } = {}) {
  const overlay = h("div", { class: "overlay", "data-testid": testid, "data-status": status }, box);
  const before = document.activeElement;
  const behind = [...document.body.children].filter((el) => !el.inert);
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    overlay.remove();
    behind.forEach((el) => (el.inert = false));
    document.removeEventListener("keydown", esc);
    if (before && before.isConnected && !before.disabled && before !== document.body) before.focus();
    else if (fallback && fallback.isConnected) {
      if (!fallback.hasAttribute("tabindex")) fallback.setAttribute("tabindex", "-1");
      fallback.focus();
    }
    if (onClose) onClose();
  };
  function esc(e) {
    if (e.key === "Escape") close();
    else if (e.key === "Tab") {
      // Round and round the box's controls: past its last, Tab would leave the page.
      const items = [...box.querySelectorAll("button, a[href], input, select, textarea")].filter((el) => !el.disabled);
      if (!items.length) return;
      e.preventDefault();
      const i = items.indexOf(document.activeElement);
      const step = e.shiftKey ? -1 : 1;
      items[i < 0 ? 0 : (i + step + items.length) % items.length].focus();
    }
  }
  overlay.addEventListener("click", (e) => {
    if (e.target === overlay) close();
  });
  document.addEventListener("keydown", esc);
  behind.forEach((el) => (el.inert = true));
  document.body.append(overlay);
  return close;
}

// Whether a modal box is open: page-wide keys (a game's u, d, h) wait until it closes.
export function modalOpen() {
  return !!document.querySelector("body > .overlay");
}

// An in-page yes/no question (the browser's own confirm() blocks the page and looks foreign).
// Resolves true only if the confirming button was pressed; `.cancel()` closes it unanswered.
export function confirmDialog(question, detail, okLabel) {
  let close = null;
  const answer = new Promise((resolve) => {
    let yes = false;
    const ok = h("button", { type: "button", class: "primary danger", "data-testid": "confirm-ok" }, okLabel);
    const cancel = h("button", { type: "button", "data-testid": "confirm-cancel" }, "Cancel");
    const box = h("div", { class: "dialog", role: "alertdialog", "aria-modal": "true", "aria-labelledby": "confirm-title" },
      h("h2", { id: "confirm-title" }, question),
      h("p", {}, detail),
      h("div", { class: "row" }, ok, cancel));
    close = modal(box, { testid: "confirm", onClose: () => resolve(yes) });
    ok.addEventListener("click", () => {
      yes = true;
      close();
    });
    cancel.addEventListener("click", close);
    cancel.focus();
  });
  answer.cancel = close;
  return answer;
}
