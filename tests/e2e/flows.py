"""Browser steps shared by the end-to-end tests: sign in, read the table, drag, wait."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "e2e"
PASSWORD = "correct-horse-9-battery"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
GAME = "[data-testid=game]"
# Screenshots are for a person to look at, and cost the shared cores a sixth of the browser
# tests' time (some 36 s of 227 s on a 2-core Xeon): taken only when asked for.
SHOTS = os.environ.get("E2E_SHOTS", "") not in ("", "0")
# Who is signed in, as the page's header shows it (the text as `to_have_text` reads it).
SIGNED_IN_JS = """(name) => { const who = document.querySelector('[data-testid=whoami]');
  return !!who && who.textContent.replace(/\\s+/g, ' ').trim() === name; }"""
# What the page shows of a game's connection: its socket's state and whether the state sent
# on connect is drawn.
CONN_JS = """(game) => { const g = document.querySelector(game);
  const conn = g && g.querySelector('[data-testid=conn]');
  return g ? {state: conn && conn.dataset.state, synced: g.dataset.synced} : 'no such game'; }"""
# A game's table is live: its socket open and the state sent on connect drawn.
LIVE_JS = f"""(game) => {{ const shown = ({CONN_JS})(game);
  return shown.state === 'open' && shown.synced === '1'; }}"""


def shot(page: Page, name: str, full_page: bool = True) -> None:
    """With E2E_SHOTS=1, a screenshot into test-artifacts/e2e/: of the page as it settles,
    with CSS animations and transitions run to their end (the result dialog's fade was caught
    halfway, its text washed out)."""
    if not SHOTS:
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page, animations="disabled")


def wait_for(page: Page, condition: str, arg: object, failure: Callable[[], str]) -> None:
    """Wait until `condition(arg)` holds on the page, checked at every frame. Playwright's
    `expect` checks at 0, 20, 70, 170, 270, 770 ms and then every half second, so a page that
    got there in 280 ms was seen at 770: the steps every test takes (signed in, a game live)
    waited some 6-12 % of the browser tests' time for nothing."""
    try:
        page.wait_for_function(condition, arg=arg)
    except PlaywrightTimeoutError:
        raise AssertionError(failure()) from None


def wait_signed_in(page: Page, username: str) -> None:
    shown = page.get_by_test_id("whoami").all_text_contents
    wait_for(page, SIGNED_IN_JS, username, lambda: f"not signed in as {username}: {shown()}")


def sign_up(page: Page, username: str) -> None:
    """Create an account through the page's own form (register, then session login)."""
    page.goto("/")
    page.get_by_test_id("auth-toggle").click()
    expect(page.get_by_test_id("auth-form")).to_have_attribute("data-mode", "signup")
    page.get_by_test_id("auth-username").fill(username)
    page.get_by_test_id("auth-password").fill(PASSWORD)
    page.get_by_test_id("auth-submit").click()
    wait_signed_in(page, username)


def sign_in(page: Page, username: str, path: str = "/") -> None:
    page.goto(path)
    page.get_by_test_id("auth-username").fill(username)
    page.get_by_test_id("auth-password").fill(PASSWORD)
    page.get_by_test_id("auth-submit").click()
    wait_signed_in(page, username)


def log_in(page: Page, username: str, path: str = "/") -> None:
    """Sign in with the session endpoint from the page's own cookie jar (faster than the form,
    same cookies), then open `path`."""
    response = page.request.post(
        "/api/auth/login", data={"username": username, "password": PASSWORD}
    )
    assert response.ok, response.text()
    page.goto(path)
    wait_signed_in(page, username)


def wait_live(page: Page, gid: int | None = None) -> None:
    """The game (game `gid`, if given) is on screen, its socket is connected and the state the
    server sends on connect has been drawn (so the table is not redrawn under a drag)."""
    game = GAME if gid is None else f"{GAME}[data-game-id='{gid}']"
    wait_for(page, LIVE_JS, game, lambda: f"{game} is not live: {page.evaluate(CONN_JS, game)}")


def open_game(page: Page, gid: int) -> None:
    """Go to a game's page and wait until it is live (a hash change does not reload)."""
    page.goto(f"/#/play/{gid}")
    wait_live(page, gid)


def log_in_to_game(page: Page, username: str, gid: int) -> None:
    """Sign in (log_in) on game `gid`'s page, and wait until it is live."""
    log_in(page, username, f"/#/play/{gid}")
    wait_live(page, gid)


def game_id(page: Page) -> int:
    return int(page.locator(GAME).get_attribute("data-game-id"))


def wait_version(page: Page, v: int) -> None:
    """The server's version `v` is on screen and nothing is in flight."""
    page.wait_for_function(
        """(v) => { const g = document.querySelector('[data-testid=game]');
                    return g && g.dataset.v === String(v) && g.dataset.pending === '0'; }""",
        arg=v,
    )


def piles(page: Page) -> dict[str, list[str]]:
    """Every pile on screen: id -> card codes bottom to top (face-up cards only)."""
    return page.evaluate(
        """() => Object.fromEntries(
              [...document.querySelectorAll('[data-testid=table] [data-pile]')]
                .map(p => [p.dataset.pile,
                           [...p.querySelectorAll('.card[data-card]')]
                             .map(c => c.dataset.card)]))"""
    )


def pile(page: Page, pile_id: str) -> Locator:
    return page.locator(f"[data-testid=table] [data-pile='{pile_id}']")


def top_card(page: Page, pile_id: str) -> Locator:
    return pile(page, pile_id).locator(".card").last


def _box(locator: Locator) -> dict:
    """The element's box once it is visible. A redraw between finding the element and measuring
    it makes Playwright answer None for the detached node, so measure again."""
    for _ in range(20):
        expect(locator).to_be_visible()
        box = locator.bounding_box()
        if box:
            return box
    raise AssertionError(f"{locator} never stayed on screen long enough to measure")


def lift(page: Page, source: Locator, grab_top: bool = False) -> tuple[float, float]:
    """Press on `source` and move a little, as a drag starts, and hold it there; the point
    pressed."""
    s = _box(source)
    sx = s["x"] + s["width"] / 2
    sy = s["y"] + (8 if grab_top else s["height"] / 2)
    page.mouse.move(sx, sy)
    page.mouse.down()
    page.mouse.move(sx + 12, sy + 12, steps=3)
    return sx, sy


def drag(page: Page, source: Locator, target: Locator, grab_top: bool = False) -> None:
    """Drag with real pointer events: press, move in steps, release over the target."""
    lift(page, source, grab_top)
    t = _box(target)
    page.mouse.move(t["x"] + t["width"] / 2, t["y"] + t["height"] / 2, steps=10)
    page.mouse.up()


def tableau_moves(legal: list[str]) -> list[tuple[str, str]]:
    """Single-card tableau-to-tableau moves among `legal`."""
    out = []
    for move in legal:
        if ":" in move or "-" not in move:
            continue
        src, dst = move.split("-")
        if src.startswith("t") and dst.startswith("t"):
            out.append((src, dst))
    return out
