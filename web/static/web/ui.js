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

export function formatSeconds(total) {
  const s = Math.max(0, Math.floor(total || 0));
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const seconds = String(s % 60).padStart(2, "0");
  return hours ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
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
