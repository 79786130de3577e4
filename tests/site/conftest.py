"""Fixtures of the built-site tests: a local HTTP server for the site and headless Chromium.

Run through `python tools/site.py test` (make test-site), which sets H100LAB_SITE_TESTS=1 (without it
tests/conftest.py does not collect this folder), installs Debian's chromium when it is missing and
points H100LAB_SITE_DIR at the site (default: the student edition, _build/html).

The browser is Debian's /usr/bin/chromium driven by Playwright (never `playwright install`). Every
request that does not go to the local server is blocked and recorded as a failure: the site must work
with no network.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sitekit import SCREENSHOTS, Crawler, html_pages, serve, site_dir, toc_docs

CHROMIUM = os.environ.get("H100LAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 900}    # a desktop
PHONE = {"width": 400, "height": 860}        # a phone (drawn at 2 device pixels per CSS pixel)


def pytest_configure(config):
    site = site_dir()
    if not (site / "index.html").is_file():
        raise pytest.UsageError(f"no built site at {site}: run `make book` first")


@pytest.fixture(scope="session")
def site() -> Path:
    return site_dir()


@pytest.fixture(scope="session")
def origin(site):
    """http://127.0.0.1:<free port> serving the built site."""
    with serve(site) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium (never a browser downloaded by Playwright)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run the tests through `python tools/site.py test`")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _context(browser, **kw):
    """A fresh context (no cache, no stored theme mode, no service worker)."""
    ctx = browser.new_context(locale="en-US", service_workers="block", **kw)
    ctx.set_default_timeout(30_000)
    return ctx


@pytest.fixture(scope="session")
def browser_context(browser):
    """A desktop window, 1400 CSS pixels wide."""
    ctx = _context(browser, viewport=VIEWPORT)
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def phone_context(browser):
    """A phone, 400 CSS pixels wide, touch, two device pixels per CSS pixel."""
    ctx = _context(browser, viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def screenshots():
    """artifacts/screenshots/, emptied once per session."""
    if SCREENSHOTS.is_dir():
        shutil.rmtree(SCREENSHOTS)
    SCREENSHOTS.mkdir(parents=True)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def crawler(browser_context, origin, site, screenshots):
    return Crawler(browser_context, origin, site, width=VIEWPORT["width"])


@pytest.fixture(scope="session")
def phone_crawler(phone_context, origin, site, screenshots):
    return Crawler(phone_context, origin, site, width=PHONE["width"])


def pytest_generate_tests(metafunc):
    site = site_dir()
    if "page" in metafunc.fixturenames:
        metafunc.parametrize("page", html_pages(site))
    if "toc_page" in metafunc.fixturenames:
        metafunc.parametrize("toc_page", [f"{d}.html" for d in toc_docs(site)])
    if "chapter_doc" in metafunc.fixturenames:
        metafunc.parametrize("chapter_doc", [d for d in toc_docs(site) if d.startswith("chapters/")])
