"""Build the book's two editions and test the built site.

    python tools/site.py student      # _build/html: chapters, exercises (stubs), appendices
    python tools/site.py instructor   # _build_instructor/_build/html: the same plus the solutions
    python tools/site.py test [PYTEST ARGS]   # headless-Chromium test of _build/html (tests/site/)

A build also: displays every explorer as a static-page explorer with precomputed states
(``$H100LAB_EXPLORER_STATES``, see ``h100lab.widgets.offline``); loads the book's Sphinx extension
``tools/h100lab_sphinx`` (header fix, numbered figures with alt text, edition marker, downloads,
licence and citation); publishes only the vendored packages some page uses; and adds the source code
(``git archive``) and the whole book as one PDF (printed by headless Chromium from the built pages) to
``_downloads/``.

Both builds start from a clean folder (an incremental Jupyter Book rebuild after a failure exits 0),
execute every chapter, and treat warnings as errors (-W -n --keep-going).

The published site needs no network when it is read. Sphinx's MathJax and myst-nb's widget
JavaScript default to public CDNs; instead, every build first vendors pinned npm packages (MathJax 3,
the ipywidgets HTML manager, RequireJS) into the ignored folder ``_site_vendor/``: ``npm pack``
downloads each tarball once from the npm registry, its sha512 is checked against the pin below, and
the files the browser needs are unpacked into ``_site_vendor/static/site-vendor/``, which ``_config.yml``
names as an ``html_static_path`` (so Sphinx copies it into ``_static/site-vendor/`` of the site). After
the build, every HTML page is scanned for a URL the browser would fetch from another host; one is an
error.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "_site_vendor"
STATIC = VENDOR / "static" / "site-vendor"
EDITIONS = ("student", "instructor")


@dataclass(frozen=True)
class NpmPackage:
    """One npm package whose files the site serves itself (never from a CDN)."""

    name: str
    version: str
    integrity: str          # the registry's dist.integrity (sha512, base64) of the tarball
    folder: str             # where its files go, under _static/site-vendor/
    keep: str               # regex on the path inside the tarball ("package/...") of files to keep

    @property
    def tarball(self) -> Path:
        return VENDOR / "npm" / f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"


# Pinned: the html-manager's major version matches ipywidgets 8 (widget protocol 2); MathJax 3 is
# what Sphinx 7 configures. Update a pin with `npm pack NAME@VERSION --json` (it prints the integrity).
NPM_PACKAGES = (
    # MathJax: the one combined component Sphinx loads, its CHTML fonts, and what it loads on demand
    # (TeX extensions through \require or autoload, the menu's accessibility tools); 24 MB -> ~7 MB
    NpmPackage("mathjax", "3.2.2",
               "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
               "mathjax", r"package/(es5/(tex-mml-chtml\.js|output/chtml/fonts/woff-v2/.*|input/tex/extensions/.*"
                          r"|ui/.*|a11y/.*|sre/.*)|LICENSE|package\.json)"),
    NpmPackage("@jupyter-widgets/html-manager", "1.0.15",
               "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
               # embed-amd.js plus the font files it loads relative to itself (its webpack publicPath)
               "html-manager", r"package/(dist/(embed-amd\.js|[0-9a-f]{20}\.(woff2?|ttf|eot|svg))|package\.json)"),
    NpmPackage("requirejs", "2.3.8",
               "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
               "requirejs", r"package/(require\.js|package\.json)"),
)


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _fetch(pkg: NpmPackage) -> bytes:
    """The package's tarball: from the cache in _site_vendor/npm/, else `npm pack` from the registry."""
    if not pkg.tarball.is_file():
        pkg.tarball.parent.mkdir(parents=True, exist_ok=True)
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is needed once to vendor the site's JavaScript (MathJax, ipywidgets); "
                             "install Node.js >= 18")
        cmd = [npm, "pack", f"{pkg.name}@{pkg.version}", "--pack-destination", str(pkg.tarball.parent),
               "--json", "--silent"]
        print("+", " ".join(cmd), flush=True)
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        made = pkg.tarball.parent / json.loads(out)[0]["filename"]
        if made != pkg.tarball:
            made.replace(pkg.tarball)
    data = pkg.tarball.read_bytes()
    got = _integrity(data)
    if got != pkg.integrity:
        pkg.tarball.unlink()
        raise SystemExit(f"{pkg.name}@{pkg.version}: tarball integrity {got} differs from the pin "
                         f"{pkg.integrity}; refusing to vendor it")
    return data


# Written next to the packages and loaded before RequireJS on every page with widgets. Two fixes:
# 1. The html-manager bundle (named AMD modules) finds its font files through webpack public paths
#    derived from each module's RequireJS URL, by default relative to the *page* (a 404 on a chapter
#    page); every module id of the bundle is mapped into the bundle's own folder, computed from this
#    script's URL. %s is the JSON list of the bundle's module ids.
# 2. ipywidgets 8 typesets widget labels through MathJax 2's API (MathJax.Hub.Queue) whenever
#    window.MathJax exists; Sphinx loads MathJax 3, which has no Hub, so on a page with math and a
#    widget the widget manager throws. MathJax 3 gets a Hub whose Queue calls typesetPromise (jobs
#    queued before MathJax has started run once it is ready).
WIDGETS_JS = """// Written by tools/site.py for the static widgets of this site.
(function () {
  var folder = new URL("html-manager/", document.currentScript.src).href;
  var paths = {};
  %s.forEach(function (id) { paths[id] = folder + id.split("/").pop(); });
  window.__jupyter_widgets_assets_path__ = folder;
  window.require = {paths: paths};  // RequireJS reads a global `require` object as its configuration
})();
(function () {
  var mj = window.MathJax;  // Sphinx's MathJax 3 configuration object, set before this script
  if (!mj) return;
  function typeset(job) {
    var el = job && job[2];
    window.MathJax.typesetPromise(el ? [el] : undefined).catch(function (err) {
      console.warn("MathJax could not typeset a widget:", err);
    });
  }
  if (mj.version) {  // MathJax has already started
    if (!mj.Hub && mj.typesetPromise) mj.Hub = {Queue: typeset};
    return;
  }
  var pending = [];
  mj.Hub = {Queue: function (job) { pending.push(job); }};
  mj.startup = mj.startup || {};
  var ready = mj.startup.ready;
  mj.startup.ready = function () {
    if (ready) ready(); else window.MathJax.startup.defaultReady();
    if (!window.MathJax.Hub) window.MathJax.Hub = {Queue: typeset};
    pending.splice(0).forEach(typeset);
  };
})();
"""
# The site's favicon (html.favicon in _config.yml); without one browsers request /favicon.ico.
FAVICON_SVG = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="5" fill="#76b900"/>
<path d="M7 8v16M7 16h8M15 8v16M20 11l3-3v16" stroke="#fff" stroke-width="3" fill="none"/>
</svg>
"""


def vendor() -> Path:
    """Unpack the pinned npm packages' browser files into _site_vendor/static/site-vendor/<folder>/.

    Idempotent: a folder whose stamp names the pinned version and integrity is left alone. Anything
    else under _site_vendor/static/ (left by an older layout) is removed, since all of it is published.
    """
    for stale in (VENDOR / "static").glob("*") if (VENDOR / "static").is_dir() else []:
        if stale != STATIC:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    for stale in STATIC.glob("*") if STATIC.is_dir() else []:
        if stale.name not in {p.folder for p in NPM_PACKAGES} | {"h100lab-widgets.js"}:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    for pkg in NPM_PACKAGES:
        dest = STATIC / pkg.folder
        stamp = VENDOR / "stamps" / f"{pkg.folder}.txt"
        want = f"{pkg.name}@{pkg.version} {pkg.integrity} {pkg.keep}\n"
        if dest.is_dir() and stamp.is_file() and stamp.read_text() == want:
            continue
        data = _fetch(pkg)
        shutil.rmtree(dest, ignore_errors=True)
        keep = re.compile(pkg.keep)
        n = 0
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for m in tar.getmembers():
                if not (m.isfile() and keep.fullmatch(m.name)):
                    continue
                rel = m.name.split("/", 1)[1]
                if rel.startswith("dist/") or rel.startswith("es5/"):
                    rel = rel.split("/", 1)[1]
                target = dest / rel
                if ".." in Path(rel).parts:
                    raise SystemExit(f"{pkg.name}: unsafe path {m.name!r} in tarball")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(m).read())
                n += 1
        if n == 0:
            raise SystemExit(f"{pkg.name}@{pkg.version}: no file matched {pkg.keep!r}")
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(want)
        print(f"vendored {pkg.name}@{pkg.version}: {n} files into {dest.relative_to(ROOT)}", flush=True)
    bundle = (STATIC / "html-manager" / "embed-amd.js").read_text(encoding="utf-8")
    ids = sorted(set(re.findall(r'define\("(@jupyter-widgets/[^"]+)"', bundle)))
    if "@jupyter-widgets/html-manager" not in ids:
        raise SystemExit("embed-amd.js defines no @jupyter-widgets/html-manager module; check the pin")
    (STATIC / "h100lab-widgets.js").write_text(WIDGETS_JS % json.dumps(ids), encoding="utf-8")
    (VENDOR / "favicon.svg").write_text(FAVICON_SVG, encoding="utf-8")
    return STATIC


# ---------------------------------------------------------------------------------------------
# What the browser would fetch from another host

# (tag, attribute) pairs whose URL the browser loads by itself when the page is shown
_FETCHING = {("script", "src"), ("img", "src"), ("iframe", "src"), ("source", "src"), ("video", "src"),
             ("audio", "src"), ("embed", "src"), ("object", "data"), ("video", "poster"), ("input", "src")}
_FETCHING_LINK_RELS = {"stylesheet", "icon", "shortcut", "preload", "prefetch", "modulepreload",
                       "preconnect", "dns-prefetch", "manifest", "apple-touch-icon"}
_CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])\s*((?:https?:)?//[^'")\s]+)""", re.I)
_SCRIPT_RESOURCE = re.compile(r"""['"]((?:https?:)?//[^'"\s]+\.(?:m?js|css|woff2?|wasm)(?:\?[^'"\s]*)?)['"]""", re.I)


class _FetchScanner(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in_style = False
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        self._in_style = tag == "style"
        if tag == "link":
            rels = set(a.get("rel", "").lower().split())
            if rels & _FETCHING_LINK_RELS and a.get("href"):
                self.urls.append(a["href"])
        for (t, attr) in _FETCHING:
            if t == tag and a.get(attr):
                self.urls.append(a[attr])
        if a.get("srcset"):
            self.urls += [part.strip().split()[0] for part in a["srcset"].split(",") if part.strip()]
        if a.get("style"):
            self.urls += _CSS_URL.findall(a["style"])
        # data-* attributes that name a base URL a script will load from (the widgets' CDN)
        for k, v in a.items():
            if k.startswith("data-") and k.endswith("-cdn") and v:
                self.urls.append(v)
        # an inline script's resource URLs (a loader's .js/.css, as sphinx-thebe wrote): fetched on use
        self._in_script = tag == "script" and not a.get("src") and a.get("type", "text/javascript") in (
            "text/javascript", "module", "application/javascript")

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_style:
            self.urls += _CSS_URL.findall(data)
        if self._in_script:
            self.urls += _SCRIPT_RESOURCE.findall(data)


def external_fetches(html_dir: Path) -> dict[str, list[str]]:
    """Map each page (and CSS file) of a built site to the off-site URLs a browser would load from it.

    Off-site: absolute ``http(s)://`` or protocol-relative ``//host`` URLs. Links a reader may click
    (``<a href>``) are not fetches and are not reported.
    """
    found: dict[str, list[str]] = {}
    off_site = re.compile(r"^\s*(?:https?:)?//", re.I)
    for p in sorted(html_dir.rglob("*.html")):
        sc = _FetchScanner()
        sc.feed(p.read_text(encoding="utf-8", errors="replace"))
        bad = sorted({u for u in sc.urls if off_site.match(u)})
        if bad:
            found[p.relative_to(html_dir).as_posix()] = bad
    for p in sorted(html_dir.rglob("*.css")):
        bad = sorted(set(_CSS_URL.findall(p.read_text(encoding="utf-8", errors="replace"))))
        if bad:
            found[p.relative_to(html_dir).as_posix()] = bad
    return found


# ---------------------------------------------------------------------------------------------
# Builds

def toc(edition: str, root: Path = ROOT) -> dict:
    """The table of contents of an edition: _toc.yml, plus (instructor) a part with every solution set."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, not {edition!r}")
    data = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    if edition == "instructor":
        sols = sorted((root / "solutions").glob("[0-9][0-9]-*.md"))
        if sols:
            part = {"caption": "Solutions (instructor edition)",
                    "chapters": [{"file": f"solutions/{p.stem}"} for p in sols]}
            parts = data["parts"]
            idx = next((i for i, p in enumerate(parts) if p.get("caption") == "Appendix"), len(parts))
            parts.insert(idx, part)
    return data


def toc_files(data: dict) -> list[str]:
    """Every document of a TOC, root first, in reading order (docnames without suffix)."""
    out = [data["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                out.append(e["file"])
            walk(e.get("sections"))
    for part in data.get("parts", []):
        walk(part.get("chapters"))
    walk(data.get("chapters"))
    return out


def html_dir(edition: str, root: Path = ROOT) -> Path:
    return (root if edition == "student" else root / "_build_instructor") / "_build" / "html"


def build(edition: str, root: Path = ROOT) -> Path:
    """Build one edition of the book in ``root`` from a clean folder: every chapter executed, warnings
    (a broken link or reference) are errors, and a failing cell fails the build (CalledProcessError).
    Another ``root`` (a test's small book) shares this checkout's vendored files."""
    vendor()
    if root == ROOT and any((root / "solutions").glob("[0-9][0-9]-*.md")):
        # the published exercise pages are the student editions generated from solutions/
        check = [sys.executable, "-m", "h100lab.grading", "student", "solutions", "exercises", "--check"]
        if subprocess.run(check, cwd=root).returncode != 0:
            raise SystemExit("exercises/ is out of date with solutions/: run `make student` and commit it")
    if root != ROOT and not (root / VENDOR.name).exists():
        (root / VENDOR.name).symlink_to(VENDOR, target_is_directory=True)
    base = root if edition == "student" else root / "_build_instructor"
    out = base / "_build"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    toc_path = out / f"_toc-{edition}.yml"
    book_toc = toc(edition, root)
    toc_path.write_text(yaml.safe_dump(book_toc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    states = out / "explorer-states"    # the explorers' precomputed figures (h100lab.widgets.offline)
    states.mkdir()
    cmd = [sys.executable, str(Path(__file__).resolve()), "jupyter-book", "build", str(root), "--path-output", str(base),
           "--toc", str(toc_path), "-W", "-n", "--keep-going"]
    print("+", " ".join(cmd), flush=True)
    # The kernels draw as a reader's Jupyter does (the inline backend, not the test suite's Agg);
    # intro.md lists every page of the edition's TOC (the instructor edition's includes the solutions);
    # explorers are displayed as static-page explorers with precomputed states; the Sphinx extension
    # (tools/h100lab_sphinx) marks the edition and the commit and links the repository.
    env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline", H100LAB_BOOK_TOC=str(toc_path),
               H100LAB_EXPLORER_STATES=str(states), H100LAB_EDITION=edition, H100LAB_COMMIT=commit(root),
               H100LAB_REPOSITORY_URL=repository_url(root))
    subprocess.run(cmd, check=True, cwd=root, env=env)
    html = out / "html"
    errs = sorted((html / "reports").rglob("*.err.log")) if (html / "reports").is_dir() else []
    if errs:
        raise SystemExit(f"notebook execution failed: {[str(e) for e in errs]}")
    prune_vendored(html)
    fetches = external_fetches(html)
    if fetches:
        raise SystemExit("pages load from other hosts (the site must work offline):\n"
                         + "\n".join(f"  {page}: {urls}" for page, urls in fetches.items()))
    source_zip(root, html / SOURCE_ZIP)
    # in its own process: Playwright's synchronous API cannot run inside another's (a test's browser)
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "pdf", str(html), edition, str(toc_path)],
                   check=True, cwd=root)
    index = html / "index.html"
    print(f"\nThe {edition} edition of H100 Lab is at {index}")
    return index


# ---------------------------------------------------------------------------------------------
# After the HTML build: what the pages use, the source code, the whole book as one PDF

SOURCE_ZIP = "_downloads/h100lab-source.zip"   # the paths tools/h100lab_sphinx links to
BOOK_PDF = "_downloads/h100lab.pdf"


def _git(root: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def commit(root: Path = ROOT) -> str:
    """The commit the book is built from (short hash; "+ local changes" when the tree differs), or ""."""
    sha = _git(root, "rev-parse", "--short=12", "HEAD")
    if sha and _git(root, "status", "--porcelain", "--untracked-files=no"):
        sha += " + local changes"
    return sha


def repository_url(root: Path = ROOT) -> str:
    """$H100LAB_REPOSITORY_URL, else the git remote ``origin`` as an https URL without credentials; ""
    when neither names an https repository."""
    url = os.environ.get("H100LAB_REPOSITORY_URL") or _git(root, "remote", "get-url", "origin")
    m = re.match(r"^(?:ssh://)?git@([^:/]+)[:/](.+)$", url)
    if m:
        url = f"https://{m.group(1)}/{m.group(2)}"
    url = re.sub(r"^https://[^@/]*@", "https://", re.sub(r"\.git/?$", "", url.strip()))
    return url if re.match(r"^https://[\w.-]+/\S+$", url) else ""


def source_zip(root: Path, dest: Path) -> Path | None:
    """The repository at the built commit as a zip (``git archive``), for readers without a clone."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not _git(root, "rev-parse", "--show-toplevel"):
        print(f"warning: {root} is not a git checkout: no {dest.name}", file=sys.stderr)
        return None
    subprocess.run(["git", "archive", "--format=zip", "--prefix=h100lab/", "-o", str(dest), "HEAD"],
                   cwd=root, check=True)
    return dest


def prune_vendored(html: Path) -> list[str]:
    """Remove vendored packages no page loads (MathJax without math, the widget manager without an
    ipywidget): the site ships only what it uses. Returns the folders removed."""
    vendor_dir = html / "_static" / "site-vendor"
    pages = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in html.rglob("*.html"))
    uses = {"mathjax": "site-vendor/mathjax/", "html-manager": "site-vendor/html-manager/",
            "requirejs": "site-vendor/requirejs/", "h100lab-widgets.js": "site-vendor/h100lab-widgets.js"}
    removed = []
    for name, marker in uses.items():
        p = vendor_dir / name
        if p.exists() and marker not in pages:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            removed.append(name)
    if removed:
        print(f"not published (no page uses them): {', '.join(removed)}", flush=True)
    return removed


# The whole book as one page in the browser: every TOC page's article in reading order, ids prefixed
# by the page, links between pages turned into links inside the document, links to the site's other
# files dropped (they mean nothing in a PDF), explorers shown in their chapter's state without
# controls; then MathJax typesets it and Chromium prints it.
PRINT_JS = r"""async ([docs, cover]) => {
  const origin = location.origin;
  const slug = (d) => "doc-" + d.replace(/[^A-Za-z0-9]+/g, "-");
  const pages = new Set(docs.map((d) => d + ".html"));
  const sections = [], titles = [];
  for (const doc of docs) {
    const url = new URL(doc + ".html", origin + "/");
    const dom = new DOMParser().parseFromString(await (await fetch(url)).text(), "text/html");
    const art = dom.querySelector("article.bd-article");
    if (!art) continue;
    art.querySelectorAll(".h100lab-explorer-controls, .h100lab-explorer-note, details.above-input, " +
                         "a.headerlink, script, .copybtn, .toggle-details").forEach((e) => e.remove());
    art.querySelectorAll("[id]").forEach((e) => { e.id = slug(doc) + "--" + e.id; });
    art.querySelectorAll("a[href]").forEach((a) => {
      const u = new URL(a.getAttribute("href"), url);
      if (u.origin !== origin) return;
      const path = decodeURIComponent(u.pathname.replace(/^\//, ""));
      if (pages.has(path)) {
        const frag = decodeURIComponent(u.hash.slice(1));
        a.setAttribute("href", "#" + slug(path.slice(0, -5)) + (frag ? "--" + frag : ""));
      } else {
        a.removeAttribute("href");
      }
    });
    art.querySelectorAll("img[src]").forEach((img) => { img.src = new URL(img.getAttribute("src"), url).href; });
    const sec = document.createElement("section");
    sec.id = slug(doc);
    sec.className = "h100lab-print-doc";
    sec.append(...art.childNodes);
    const h1 = sec.querySelector("h1");
    titles.push([sec.id, h1 ? h1.textContent.replace(/#$/, "").trim() : doc]);
    sections.push(sec);
  }
  const style = document.createElement("style");
  style.textContent = `
    @page { size: A4; margin: 16mm 14mm 18mm 14mm; }
    html, body { background: #fff !important; }
    .h100lab-print { max-width: none; padding: 0; }
    .h100lab-print-doc { break-before: page; }
    .h100lab-print pre { white-space: pre-wrap; overflow-wrap: anywhere; }
    .h100lab-print img { max-width: 100%; height: auto; break-inside: avoid; }
    .h100lab-print figure, .h100lab-print .h100lab-explorer { break-inside: avoid; }
    .h100lab-print .h100lab-explorer { border: none; padding: 0; }
    .h100lab-print table { break-inside: auto; }
    .h100lab-print-cover { text-align: center; padding-top: 30mm; }
    .h100lab-print-cover nav { text-align: left; margin: 18mm auto 0; max-width: 150mm; }
    .h100lab-print-cover nav li { margin: .2em 0; }`;
  document.head.append(style);
  const main = document.createElement("main");
  main.className = "bd-article h100lab-print";
  const front = document.createElement("section");
  front.className = "h100lab-print-cover";
  front.innerHTML = cover + "<nav><h2>Contents</h2><ol></ol></nav>";
  for (const [id, title] of titles) {
    const li = document.createElement("li"), a = document.createElement("a");
    a.href = "#" + id; a.textContent = title; li.append(a); front.querySelector("ol").append(li);
  }
  main.append(front, ...sections);
  document.body.className = "";
  document.body.replaceChildren(main);
  if (main.querySelector(".math")) {
    if (!window.MathJax || !window.MathJax.typesetPromise) {
      window.MathJax = {options: {processHtmlClass: "tex2jax_process|mathjax_process|math|output_area"}};
      const s = document.createElement("script");
      s.src = origin + "/_static/site-vendor/mathjax/tex-mml-chtml.js";
      await new Promise((ok, fail) => { s.onload = ok; s.onerror = fail; document.head.append(s); });
      await window.MathJax.startup.promise;
    }
    await window.MathJax.typesetPromise([main]);
  }
  await Promise.all(Array.from(document.images).map((img) => img.complete ? null :
    new Promise((ok) => { img.onload = img.onerror = ok; })));
  await document.fonts.ready;
  return {pages: sections.length, math: document.querySelectorAll("mjx-container").length,
          images: document.images.length};
}"""


@contextlib.contextmanager
def _serve(directory: Path):
    """Serve ``directory`` on http://127.0.0.1:<free port> until the block ends (yields the origin)."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def book_pdf(html: Path, docs: list[str], edition: str) -> Path | None:
    """The whole edition as one PDF (A4, page numbers, bookmarks per page), printed by headless
    Chromium from the built pages into ``_downloads/h100lab.pdf``. Without Chromium (and no root to
    install it) it warns and makes none."""
    try:
        chromium = ensure_chromium()
    except SystemExit as exc:
        print(f"warning: no PDF of the book: {exc}", file=sys.stderr)
        return None
    from playwright.sync_api import sync_playwright

    dest = html / BOOK_PDF
    dest.parent.mkdir(parents=True, exist_ok=True)
    label = {"student": "Student edition", "instructor": "Instructor edition (with solutions)"}.get(edition, edition)
    sha = commit()
    cover = ("<h1>H100 Lab</h1><p>An executable textbook on programming NVIDIA's Hopper GPU (H100, H200)</p>"
             f"<p><b>{label}</b>{' · commit ' + sha if sha else ''}</p>"
             "<p>Apache License 2.0 · the interactive explorers are shown in each chapter's setting</p>")
    footer = ('<div style="font-size:8px;width:100%;text-align:center;color:#555">H100 Lab · '
              '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
    with _serve(html) as origin, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), headless=True,
                                     args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page()
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith((origin, "data:", "blob:"))
                       else r.abort("blockedbyclient"))
            page.goto(f"{origin}/{docs[0]}.html", wait_until="load")
            info = page.evaluate(PRINT_JS, [docs, cover])
            page.emulate_media(media="print")
            page.pdf(path=str(dest), format="A4", print_background=True, display_header_footer=True,
                     header_template="<span></span>", footer_template=footer, outline=True, tagged=True,
                     margin={"top": "16mm", "bottom": "18mm", "left": "14mm", "right": "14mm"})
        finally:
            browser.close()
    print(f"the whole book as one PDF ({info['pages']} pages of the site, {info['images']} images, "
          f"{info['math']} formulas): {dest} ({dest.stat().st_size // 1024} KiB)", flush=True)
    return dest


# ---------------------------------------------------------------------------------------------
# Browser test

CHROMIUM = Path(os.environ.get("H100LAB_CHROMIUM", "/usr/bin/chromium"))


def _has_cjk_font() -> bool:
    fc = shutil.which("fc-list")
    if fc is None:
        return False
    out = subprocess.run([fc, ":lang=zh", "family"], capture_output=True, text=True).stdout
    return bool(out.strip())


def ensure_chromium() -> Path:
    """Debian's chromium, and a Chinese font for the glossary's terms in the screenshots; installed
    with apt-get (as root) when missing. Without root, a missing chromium is an error, a missing font
    a warning."""
    need = []
    if not CHROMIUM.exists():
        need.append("chromium")
    if not _has_cjk_font():
        need.append("fonts-wqy-microhei")
    if need and CHROMIUM == Path("/usr/bin/chromium") and shutil.which("apt-get") and os.geteuid() == 0:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *need], check=True, env=env)
    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} is missing: install Debian's chromium package "
                         "(apt-get install chromium fonts-wqy-microhei) or set H100LAB_CHROMIUM")
    if not _has_cjk_font():
        print("warning: no Chinese font (fonts-wqy-microhei): Chinese terms show as boxes in screenshots",
              file=sys.stderr)
    return CHROMIUM


def test(args: list[str]) -> int:
    """Run tests/site/ against the built student site with headless Chromium."""
    html = Path(os.environ.get("H100LAB_SITE_DIR", html_dir("student")))
    if not (html / "index.html").is_file():
        print(f"no built site at {html}: run `make book` first", file=sys.stderr)
        return 2
    ensure_chromium()
    env = dict(os.environ, H100LAB_SITE_TESTS="1", H100LAB_SITE_DIR=str(html), H100LAB_CHROMIUM=str(CHROMIUM))
    return subprocess.call([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                            str(ROOT / "tests" / "site")] + args, cwd=ROOT, env=env)


def jupyter_book(argv: list[str]) -> int:
    """Jupyter Book's command line, with one fix to the notebook executor (nbclient).

    Each widget explorer shows its figure in an ipywidgets ``Output``. When the kernel writes into an
    Output widget, nbclient mirrors the widget's outputs back to the kernel with a send on the shell
    socket *while* it awaits the cell's execute_reply on that same asyncio socket; the reply is then
    often not noticed until the execution timeout runs out (jupyter/nbclient#312, open): 300 s lost
    per chapter, with nothing failing. The send only updates the kernel's copy of the outputs, which
    nothing reads; the widget state saved into the page comes from nbclient's own copy (kept by its
    output hooks), so the send is dropped.
    """
    import nbclient.output_widget

    nbclient.output_widget.OutputWidget.send = lambda self, *args, **kwargs: None
    # the book's Sphinx extension (tools/h100lab_sphinx), also for a book built outside this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from jupyter_book.cli.main import main as jb_main

    return jb_main(argv, prog_name="jupyter-book", standalone_mode=True)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "jupyter-book":
        return jupyter_book(argv[1:])
    if not argv or argv[0] not in ("student", "instructor", "test", "vendor", "pdf"):
        print(__doc__)
        return 2
    if argv[0] == "pdf":   # pdf HTML_DIR EDITION TOC_FILE: the whole book as one PDF (see build)
        html, edition, toc_file = Path(argv[1]), argv[2], Path(argv[3])
        book_pdf(html, toc_files(yaml.safe_load(toc_file.read_text(encoding="utf-8"))), edition)
        return 0
    if argv[0] == "test":
        return test(argv[1:])
    if argv[0] == "vendor":
        vendor()
        return 0
    build(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
