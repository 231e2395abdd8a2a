// A WebSocket that reconnects by itself, with exponential backoff and a heartbeat.
//
// Frames are JSON `{"t": TYPE, "d": DATA}`. The socket rides on the session cookie (same
// origin). Listeners: onframe(frame), onstatus(status, info), onopen(), onfatal(code).
// Status is one of: "connecting", "open", "waiting" (backing off; info.retryIn ms, and
// info.code and info.reason when the server closed the socket saying why),
// "closed" (given up: 4401 not signed in, 4404 no socket at that path, or closed by us). A
// socket the server cannot serve (no such game, one not open to this user yet) stays open and
// says why in an `error` frame.

const FATAL = { 4401: "not signed in", 4404: "no such socket" };

export class ReconnectingSocket {
  constructor(path, { onframe, onstatus, onopen, onfatal } = {}) {
    this.path = path;
    this.onframe = onframe || (() => {});
    this.onstatus = onstatus || (() => {});
    this.onopen = onopen || (() => {});
    this.onfatal = onfatal || (() => {});
    this.ws = null;
    this.attempt = 0;
    this.timer = null;
    this.heartbeat = null;
    this.lastSeen = 0;
    this.stopped = false;
    this.status = "closed";
    this._wake = () => this.reconnectNow();
    window.addEventListener("online", this._wake);
    // The browser knows it lost the network at once; the heartbeat would take half a minute.
    this._lost = () => this.drop();
    window.addEventListener("offline", this._lost);
    document.addEventListener("visibilitychange", this._onVisible = () => {
      if (document.visibilityState === "visible") this.reconnectNow();
    });
    this.connect();
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}${this.path}`;
  }

  setStatus(status, info = {}) {
    this.status = status;
    this.onstatus(status, info);
  }

  connect() {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.setStatus("connecting", { attempt: this.attempt });
    let ws;
    try {
      ws = new WebSocket(this.url());
    } catch (err) {
      this.scheduleRetry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (ws !== this.ws) return;
      this.attempt = 0;
      this.lastSeen = Date.now();
      this.setStatus("open");
      this.startHeartbeat();
      this.onopen();
    };
    ws.onmessage = (event) => {
      if (ws !== this.ws) return;
      this.lastSeen = Date.now();
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch (err) {
        return;
      }
      if (frame && frame.t === "pong") return;
      this.onframe(frame);
    };
    ws.onclose = (event) => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.stopHeartbeat();
      if (this.stopped) return;
      if (FATAL[event.code]) {
        this.stopped = true;
        this.setStatus("closed", { code: event.code, reason: FATAL[event.code] });
        this.onfatal(event.code);
        return;
      }
      // 4429 = rate limited: back off harder before trying again.
      if (event.code === 4429) this.attempt = Math.max(this.attempt, 4);
      // The server's own reason, when it closed with one (4429 too many sockets or frames,
      // 1001 restarting): the page can say why it is offline, not just that it is.
      this.scheduleRetry(event.reason ? { code: event.code, reason: event.reason } : {});
    };
    ws.onerror = () => {
      /* onclose follows and handles it */
    };
  }

  scheduleRetry(closed = {}) {
    if (this.stopped) return;
    const base = Math.min(10000, 500 * 2 ** this.attempt);
    const delay = Math.round(base * (0.75 + Math.random() * 0.5));
    this.attempt += 1;
    this.setStatus("waiting", { retryIn: delay, attempt: this.attempt, ...closed });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  reconnectNow() {
    if (this.stopped) return;
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) return;
    this.attempt = 0;
    this.connect();
  }

  // A ping every 10 s; nothing heard for 25 s (not even a pong) and the link is dead: start
  // over. A link lost without the browser noticing (a sleeping laptop, a gateway) shows as
  // offline within 35 s.
  startHeartbeat() {
    this.stopHeartbeat();
    this.heartbeat = setInterval(() => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
      if (Date.now() - this.lastSeen > 25000) {
        this.drop();
        return;
      }
      this.send({ t: "ping" });
    }, 10000);
  }

  stopHeartbeat() {
    clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  get isOpen() {
    return !!this.ws && this.ws.readyState === WebSocket.OPEN;
  }

  send(frame) {
    if (!this.isOpen) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  // Close the current connection as if the network dropped it; the socket reconnects.
  drop() {
    const ws = this.ws;
    if (!ws) return;
    this.ws = null;
    this.stopHeartbeat();
    shut(ws);
    this.scheduleRetry();
  }

  close() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stopHeartbeat();
    window.removeEventListener("online", this._wake);
    window.removeEventListener("offline", this._lost);
    document.removeEventListener("visibilitychange", this._onVisible);
    const ws = this.ws;
    this.ws = null;
    if (ws) shut(ws, 1000);
    this.status = "closed";
  }
}

// Close a socket this page has let go of. One still opening is closed once it opens: closed
// before, the browser logs a warning ("closed before the connection is established") each time
// a page leaves a socket it had just asked for (a board's tab switched at once, a game left).
function shut(ws, code) {
  if (ws.readyState === WebSocket.CONNECTING) {
    ws.onopen = () => ws.close(code);
    return;
  }
  try {
    ws.close(code);
  } catch (err) {
    /* already closing */
  }
}
