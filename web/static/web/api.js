// REST client: JSON in, JSON out, session cookie + CSRF header, errors as ApiError.
//
// The browser signs in with a session (POST /api/auth/login sets the cookie), because a
// WebSocket cannot carry an Authorization header; Django then wants the CSRF token (from the
// `csrftoken` cookie that GET / sets) in `X-CSRFToken` on every unsafe request.

export class ApiError extends Error {
  constructor(status, code, detail, body = {}) {
    super(detail);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.fields = body.fields || null;
    this.body = body;
    this.retryAfter = null; // seconds, from a 429's Retry-After
  }
}

export function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [k, ...rest] = part.trim().split("=");
    if (k === name) return decodeURIComponent(rest.join("="));
  }
  return null;
}

// Milliseconds to add to Date.now() to get the server's clock (from the Date header).
export let serverSkewMs = 0;

function noteServerDate(response) {
  const header = response.headers.get("Date");
  if (!header) return;
  const server = Date.parse(header);
  if (Number.isNaN(server)) return;
  // The header has whole seconds: only trust a difference bigger than that rounding.
  const skew = server - Date.now();
  serverSkewMs = Math.abs(skew) > 1500 ? skew : 0;
}

export function serverNow() {
  return Date.now() + serverSkewMs;
}

// A 401 means the session is gone (signed out in another tab, or expired), whichever request
// heard it first: the app is told once, after the caller has had its say (app.js).
export function signedOut() {
  setTimeout(() => window.dispatchEvent(new Event("arena:signed-out")), 0);
}

// The tabs of one browser share its session: the one that signs out (or changes the password,
// which signs out everywhere) tells the others at once. A tab with no socket open (the lobby)
// heard it only at its next request, up to 10 s later; another device still does.
const tabs = typeof BroadcastChannel === "function" ? new BroadcastChannel("arena-session") : null;
if (tabs) {
  tabs.onmessage = (event) => {
    if (event.data === "signed-out") signedOut();
  };
}

export function tellOtherTabsSignedOut() {
  if (tabs) tabs.postMessage("signed-out");
}

// A 429 refuses a request before any of it is done (the per-client limit on requests at once,
// or a throttle), so sending it again is safe. A short wait is waited out here, at most
// RETRIES times; a long one (sign-in throttled for a minute) is the caller's error to show.
const RETRIES = 3;
const MAX_RETRY_WAIT_S = 5;

function retryAfterSeconds(response) {
  const header = response.headers.get("Retry-After");
  const seconds = header === null ? 1 : Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
}

export async function api(method, path, body) {
  for (let attempt = 0; ; attempt += 1) {
    const response = await send(method, path, body);
    if (response.status === 429 && attempt < RETRIES) {
      const wait = retryAfterSeconds(response);
      if (wait !== null && wait <= MAX_RETRY_WAIT_S) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(wait, 0.2) * 1000));
        continue;
      }
    }
    return answer(response);
  }
}

async function send(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (!["GET", "HEAD", "OPTIONS"].includes(method)) {
    const csrf = cookie("csrftoken");
    if (csrf) headers["X-CSRFToken"] = csrf;
  }
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, "network", "The server cannot be reached. Check your connection.");
  }
  return response;
}

async function answer(response) {
  noteServerDate(response);
  if (response.status === 204) return null;
  let data = null;
  const type = response.headers.get("Content-Type") || "";
  if (type.includes("json")) {
    try {
      data = await response.json();
    } catch (err) {
      data = null;
    }
  }
  if (response.status === 401) signedOut();
  if (!response.ok) {
    const code = (data && data.code) || `http_${response.status}`;
    const detail = (data && data.detail) || `${response.status} ${response.statusText || "error"}`;
    const error = new ApiError(response.status, code, detail, data || {});
    if (response.status === 429) error.retryAfter = retryAfterSeconds(response);
    throw error;
  }
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body = {}) => api("POST", path, body);
