"""`make book`'s guarantees, shown on small books built with the project's own _config.yml and
tools/site.py: a failing cell fails the build, a broken cross-reference fails the build, and a
good page — math and a widget together — builds into a site that renders in the browser with no network."""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from sitekit import ROOT, Crawler, serve, site_tool

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---
"""

GOOD = HEADER + """
(good)=
# A good page

Math, typeset offline: $\\sum_i x_i^2$.

```{code-cell} ipython3
x = 6 * 7
assert x == 42
print(x)
```

```{code-cell} ipython3
import ipywidgets as W

W.IntSlider(value=3, min=1, max=8, description=r"blocks \\(b\\)")
```

""" + "".join(f"""
```{{code-cell}} ipython3
import time

out = W.Output()   # the way an explorer redraws its figure: clear, then display into the Output
out.clear_output(wait=True)
with out:
    time.sleep(0.3)  # (drawing a figure takes this long; the reply then races nbclient's send)
    print("written into Output widget {k}")
out
```
""" for k in range(3))

FAILING_CELL = GOOD + """
```{code-cell} ipython3
assert x == 41, "the model disagrees"
```
"""

BROKEN_REF = GOOD + """
See {ref}`a-label-that-does-not-exist`.
"""


def _book(tmp_path, page: str):
    root = tmp_path / "book"
    (root / "chapters").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nparts:\n  - caption: Lessons\n"
                                   "    chapters:\n      - file: chapters/page\n")
    (root / "intro.md").write_text("# Small book\n\nA test book: {doc}`chapters/page`.\n")
    (root / "chapters" / "page.md").write_text(page)
    return root


@pytest.mark.parametrize("source", [FAILING_CELL, BROKEN_REF], ids=["failing-cell", "broken-reference"])
def test_a_broken_page_fails_the_build(tmp_path, source):
    with pytest.raises(subprocess.CalledProcessError):
        site_tool().build("student", root=_book(tmp_path, source))


def test_a_good_page_builds_and_renders_offline(tmp_path, browser_context):
    t0 = time.monotonic()
    index = site_tool().build("student", root=_book(tmp_path, GOOD))
    # nbclient#312 (see tools/site.py jupyter_book) would stall the Output widget's cell to the
    # 300 s execution timeout; a few seconds is normal
    assert time.monotonic() - t0 < 120, "the build stalled (an Output widget's cell waited for its reply)"
    html = index.parent
    page = (html / "chapters" / "page.html").read_text(encoding="utf-8")
    assert "site-vendor/mathjax/tex-mml-chtml.js" in page, "MathJax is not served by the site"
    assert "site-vendor/html-manager/embed-amd.js" in page, "the widget manager is not served by the site"
    assert not site_tool().external_fetches(html)
    with serve(html) as origin:
        v = Crawler(browser_context, origin, html, screenshots=False).visit("chapters/page.html")
    assert not (v.blocked or v.failed_requests or v.page_errors or v.console_errors), v
    assert v.info["math"] >= 1 and not v.info["math_errors"], "MathJax did not typeset the page offline"
    for k in range(3):
        assert f"written into Output widget {k}" in v.info["text"], "an Output widget's saved outputs are not shown"
    assert v.info["math_in_widgets"] >= 1, "the widget's label (math in its description) was not typeset"
    assert v.info["widgets"] and all(w["rendered"] and w["size"][1] > 0 for w in v.info["widgets"]), \
        "the widget was not rendered from its saved state"


def test_vendored_tarballs_match_their_pins(tmp_path, monkeypatch):
    """The cached npm tarballs hash to the pinned integrity; a tarball that does not is refused and
    deleted (so the next build downloads it again)."""
    tool = site_tool()
    for pkg in tool.NPM_PACKAGES:
        assert tool._integrity(pkg.tarball.read_bytes()) == pkg.integrity, pkg.name
    pkg = tool.NPM_PACKAGES[-1]
    monkeypatch.setattr(tool, "VENDOR", tmp_path)
    forged = tool.NpmPackage(pkg.name, pkg.version, "sha512-" + "A" * 86 + "==", pkg.folder, pkg.keep)
    forged.tarball.parent.mkdir(parents=True)
    forged.tarball.write_bytes(b"not the package")
    with pytest.raises(SystemExit, match="integrity"):
        tool._fetch(forged)
    assert not forged.tarball.exists()
