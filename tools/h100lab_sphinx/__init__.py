"""The book's own Sphinx extension: what Jupyter Book's theme does not do, or does wrong.

Loaded through ``sphinx.local_extensions`` in ``_config.yml`` (``tools/site.py`` also puts ``tools/``
on ``sys.path``, so a test's small book built elsewhere finds it). It adds, with absolute paths, its
own ``templates/`` and ``static/`` folders, and:

* **Header fix.** sphinx-book-theme 1.3 on pydata-sphinx-theme 0.17 renders pydata's header bar (a
  lone search field across the top of every page), whose hidden sidebar buttons come first in the
  page, so both themes' scripts wire *those* and the visible article-header buttons open nothing
  (executablebooks/sphinx-book-theme#999). ``templates/sections/header.html`` renders no header.
* **Figures.** Every image a code cell outputs becomes a numbered figure whose caption is the
  figure's title and whose alt text says what it shows — both read from the ``Title`` and
  ``Description`` text chunks that ``h100lab.viz.style.png`` writes into the PNG.
* **Explorers.** The folder of precomputed explorer states (``$H100LAB_EXPLORER_STATES``, see
  ``h100lab.widgets.offline``) is published as ``_static/explorers/``; a page on which no ipywidget
  is rendered gets no widget state and no widget manager.
* **Reader features.** A marker of the edition (``$H100LAB_EDITION``) in every page's header; an
  ``.ipynb`` of each page in the download menu (the executed notebook, without widget state); the
  whole book as a PDF and the source code as a zip in that menu (``tools/site.py`` makes both); a
  repository button when the repository's URL is known (``$H100LAB_REPOSITORY_URL``); licence and
  citation in every page's footer.
"""
from __future__ import annotations

import json
import os
import re
import struct
import zlib
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform

HERE = Path(__file__).resolve().parent
EDITIONS = {"student": "Student edition", "instructor": "Instructor edition · with solutions"}
PDF = "_downloads/h100lab.pdf"          # written by tools/site.py after the HTML build
SOURCE_ZIP = "_downloads/h100lab-source.zip"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# mime types myst-nb's HTML builder prefers to image/png (so a bundle holding one is not an image)
ABOVE_PNG = {WIDGET_VIEW, "application/javascript", "text/html", "image/svg+xml"}


# ---------------------------------------------------------------------------------------------
# PNG text chunks

def png_text(path: Path) -> dict[str, str]:
    """The tEXt/zTXt/iTXt chunks of a PNG file (keyword -> text)."""
    out: dict[str, str] = {}
    try:
        data = path.read_bytes()
    except OSError:
        return out
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return out
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"tEXt":
            k, _, v = body.partition(b"\0")
            out[k.decode("latin-1")] = v.decode("latin-1")
        elif kind == b"zTXt":
            k, _, v = body.partition(b"\0")
            out[k.decode("latin-1")] = zlib.decompress(v[1:]).decode("latin-1")
        elif kind == b"iTXt":
            k, _, rest = body.partition(b"\0")
            compressed, _method, rest = rest[0], rest[1], rest[2:]
            _lang, _, rest = rest.partition(b"\0")
            _tk, _, text = rest.partition(b"\0")
            out[k.decode("latin-1")] = (zlib.decompress(text) if compressed else text).decode("utf-8")
        elif kind == b"IEND":
            break
    return out


def caption_of(meta: dict[str, str]) -> str:
    """A figure's caption: its title, else the first sentence after "Figure." of its description."""
    title = meta.get("Title", "").strip()
    if title:
        return title[0].upper() + title[1:]
    desc = re.sub(r"^Figure\.?\s*(\d+ panels?:\s*)?", "", meta.get("Description", "").strip())
    desc = re.sub(r"^(a panel|“[^”]*”)\s*(plotting\s*)?", "", desc)
    return (desc[0].upper() + desc[1:]).rstrip(".") if desc else ""


class OutputFigures(SphinxTransform):
    """Each image output of a code cell becomes a numbered figure with a caption and alt text."""

    default_priority = 400

    def apply(self, **kwargs) -> None:
        n = 0
        slug = re.sub(r"[^a-z0-9]+", "-", self.env.docname.lower()).strip("-")
        for bundle in list(self.document.findall(nodes.container)):
            if bundle.get("nb_element") != "mime_bundle" or isinstance(bundle.parent, nodes.figure):
                continue
            kinds = {c.get("mime_type") for c in bundle.children if isinstance(c, nodes.container)}
            if "image/png" not in kinds or kinds & ABOVE_PNG:
                continue
            images = [i for c in bundle.children if c.get("mime_type") == "image/png" for i in c.findall(nodes.image)]
            if not images:
                continue
            meta = png_text(self._path(images[0]["uri"]))
            if meta.get("Description") and not images[0].get("alt"):
                images[0]["alt"] = meta["Description"]
            caption = caption_of(meta)
            if not caption:
                continue
            n += 1
            fig = nodes.figure(classes=["h100lab-output-figure"])
            fig_id = f"figure-{slug}-{n}"
            fig["ids"].append(fig_id)
            self.document.ids[fig_id] = fig
            bundle.replace_self(fig)
            fig += bundle
            fig += nodes.caption(caption, caption)

    def _path(self, uri: str) -> Path:
        """The image file: myst-nb's URIs are relative to the source folder (``/_build/...``)."""
        for p in (Path(self.env.srcdir) / uri.lstrip("/"), Path(self.env.doc2path(self.env.docname)).parent / uri,
                  Path(uri)):
            if p.is_file():
                return p
        return Path(uri)


def drop_unused_widget_state(app, doctree) -> None:
    """A page that renders no ipywidget (explorers are static HTML) gets no saved widget state and
    does not load the widget manager: the state would be the notebook's final one, never shown."""
    has_view = any(c.get("mime_type") == WIDGET_VIEW for c in doctree.findall(nodes.container))
    meta = getattr(app.env, "nb_metadata", {}).get(app.env.docname)
    if has_view or not meta or "js_files" not in meta:
        return
    for key in [k for k in meta["js_files"] if k.startswith("ipywidgets")]:
        del meta["js_files"][key]


# ---------------------------------------------------------------------------------------------
# Configuration and pages

def on_config(app, config) -> None:
    config.templates_path = [str(HERE / "templates"), *config.templates_path]
    statics = [str(HERE / "static")]
    states = os.environ.get("H100LAB_EXPLORER_STATES")
    if states and Path(states).is_dir():
        statics.append(states)          # holds explorers/*.png -> _static/explorers/
    config.html_static_path = [*config.html_static_path, *statics]
    for css in ("h100lab-site.css",):
        if css not in [c if isinstance(c, str) else c[0] for c in config.html_css_files]:
            config.html_css_files.append(css)
    if "h100lab-explorer.js" not in [j if isinstance(j, str) else j[0] for j in config.html_js_files]:
        config.html_js_files.append("h100lab-explorer.js")
    opts = config.html_theme_options
    start = list(opts.get("article_header_start") or ["toggle-primary-sidebar.html"])
    if "h100lab-edition.html" not in start:
        start.append("h100lab-edition.html")
    opts["article_header_start"] = start
    items = list(opts.get("footer_content_items") or
                 ["author.html", "copyright.html", "last-updated.html", "extra-footer.html"])
    if "h100lab-footer.html" not in items:
        items.append("h100lab-footer.html")
    opts["footer_content_items"] = items
    repo = os.environ.get("H100LAB_REPOSITORY_URL", "").strip()
    if repo:
        opts["repository_url"] = repo
        opts["use_repository_button"] = True
    edition = os.environ.get("H100LAB_EDITION", "student")
    config.html_context = {**config.html_context, "h100lab_edition": edition,
                           "h100lab_edition_label": EDITIONS.get(edition, edition),
                           "h100lab_commit": os.environ.get("H100LAB_COMMIT", ""),
                           "h100lab_pdf": PDF, "h100lab_source_zip": SOURCE_ZIP}


def _clean_notebook(src: Path, dest: Path) -> None:
    """The executed notebook a reader downloads: no saved widget state (its models died with the
    build's kernel), outputs kept."""
    nb = json.loads(src.read_text(encoding="utf-8"))
    nb.get("metadata", {}).pop("widgets", None)
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            if isinstance(out.get("data"), dict):
                out["data"].pop(WIDGET_VIEW, None)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def add_notebook_download(app, pagename, templatename, context, doctree) -> None:
    """Offer the page's executed notebook as ``.ipynb`` (the theme's download menu shows it)."""
    if doctree is None or app.builder.format != "html":
        return
    src = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not src.is_file():
        return
    _clean_notebook(src, Path(app.outdir) / "_sources" / f"{pagename}.ipynb")
    context["ipynb_source"] = f"{pagename}.ipynb"


def add_book_downloads(app, pagename, templatename, context, doctree) -> None:
    """The whole book (PDF) and the source code (zip) join the page's download menu."""
    pathto = context.get("pathto")
    if pathto is None:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons":
            continue
        group["buttons"] += [
            {"type": "link", "url": pathto(PDF, 1), "text": "book .pdf", "icon": "fas fa-book",
             "tooltip": "The whole book as one PDF", "label": "download-book-pdf-button"},
            {"type": "link", "url": pathto(SOURCE_ZIP, 1), "text": "source .zip", "icon": "fas fa-file-zipper",
             "tooltip": "The book's repository: chapters, the h100lab package, tests, data",
             "label": "download-source-zip-button"},
        ]


def mathjax_only_with_math(app, pagename, templatename, context, doctree) -> None:
    """Sphinx also loads MathJax on a page whose toctree *includes* a page with math (the landing
    page includes the whole book); load it only on pages that hold math themselves."""
    if doctree is None or app.builder.format != "html":
        return
    if any(True for _ in doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))):
        return
    files = context.get("script_files")
    if isinstance(files, list):
        files[:] = [js for js in files if "mathjax" not in str(js).lower()
                    and "window.MathJax" not in getattr(js, "attributes", {}).get("body", "")]


def setup(app):
    app.connect("config-inited", on_config)
    app.add_transform(OutputFigures)
    app.connect("doctree-read", drop_unused_widget_state)
    app.connect("html-page-context", add_notebook_download, priority=500)
    app.connect("html-page-context", add_book_downloads, priority=502)
    app.connect("html-page-context", mathjax_only_with_math, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
