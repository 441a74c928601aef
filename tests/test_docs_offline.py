"""The documentation renders offline.

Math is typeset by a MathJax that the ``doc`` extra installs and the build
copies next to the pages (no CDN), the theme's additions load nothing
remote, and every cross-reference resolves (``nitpicky``). These tests read
doc/conf.py and run one tiny Sphinx build; they are skipped, saying why,
when the ``doc`` extra is not installed.
"""

import importlib
import importlib.util
import os
import re
import runpy
import sys
from pathlib import Path
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "doc"
REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)


def _require(module, what):
    if importlib.util.find_spec(module) is None:
        pytest.skip(
            f"{module} is not installed, so {what} is NOT checked; install the "
            'documentation tools with: python -m pip install -e ".[doc]"'
        )


@pytest.fixture(scope="module")
def conf():
    """The names doc/conf.py defines, read without side effects."""
    _require("sphinx", "doc/conf.py")
    saved_path = list(sys.path)
    with mock.patch.dict(os.environ):  # conf.py unsets SKDP_EXAMPLES_FAST
        namespace = runpy.run_path(str(DOC / "conf.py"))
    sys.path[:] = saved_path
    return namespace


@pytest.fixture(scope="module")
def offline_math(conf):
    name = conf["OFFLINE_MATH_EXTENSION"]
    _require(name, "that the docs typeset math without a CDN")
    return name


def test_math_extensions_are_configured(conf, offline_math):
    extensions = conf["extensions"]
    assert "sphinx.ext.mathjax" in extensions
    assert offline_math in extensions
    # Anything set here would replace the local copy the extension sets.
    assert "mathjax_path" not in conf


def test_offline_extension_points_mathjax_at_a_local_copy(offline_math):
    module = importlib.import_module(offline_math)

    class Config:
        mathjax_path = "https://cdn.example/mathjax/tex-chtml.js"

    class App:
        config = Config()
        handlers = []

        def connect(self, event, handler, *args, **kwargs):
            self.handlers.append(event)

    app = App()
    module.setup(app)
    path = app.config.mathjax_path
    assert not REMOTE.match(path), path
    # The script exists in the package, and is copied when the build ends.
    static = Path(module.__file__).resolve().parent / "static"
    assert (static / path).is_file(), static / path
    assert "build-finished" in app.handlers


def test_a_page_with_math_loads_no_remote_script(offline_math, tmp_path):
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"extensions = ['sphinx.ext.mathjax', {offline_math!r}]\n",
        encoding="utf-8",
    )
    (src / "index.rst").write_text(
        "Math\n====\n\nThe noise has scale :math:`\\Delta / \\varepsilon`.\n",
        encoding="utf-8",
    )
    out = tmp_path / "html"
    app = Sphinx(
        str(src),
        str(src),
        str(out),
        str(tmp_path / "doctrees"),
        "html",
        status=None,
        warning=None,
        freshenv=True,
    )
    app.build()
    html = (out / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", html)
    assert any("mathjax" in src for src in scripts), scripts
    assert not [src for src in scripts if REMOTE.match(src)], scripts
    for script in scripts:
        assert (out / script.split("?")[0]).is_file(), script


def test_static_files_are_registered_and_load_nothing_remote(conf):
    static_dirs = [DOC / d for d in conf["html_static_path"]]
    for name in conf.get("html_css_files", []):
        found = [d / name for d in static_dirs if (d / name).is_file()]
        assert found, f"{name} is not in html_static_path"
    for directory in static_dirs:
        for path in directory.rglob("*"):
            if path.suffix in {".css", ".js", ".html"}:
                text = path.read_text(encoding="utf-8")
                assert not re.search(
                    r"(url\(|@import|src=)\s*['\"]?(https?:)?//", text
                ), path


def test_wide_blocks_scroll_and_gallery_output_is_not_capped(conf):
    css = (DOC / "_static" / "skdp.css").read_text(encoding="utf-8")
    assert "skdp.css" in conf["html_css_files"]
    assert re.search(r"div\.body pre\s*\{[^}]*overflow:\s*auto", css)
    assert re.search(r"sphx-glr-script-out[^{]*\{[^}]*max-height:\s*none", css)


def test_no_page_loads_scripts_from_a_cdn(conf):
    # sphinx-gallery's computation-times page loads jQuery and DataTables
    # from CDNs.
    assert conf["sphinx_gallery_conf"]["write_computation_times"] is False


def test_every_skdp_reference_must_resolve(conf):
    assert conf["nitpicky"] is True
    for _role, target in conf["nitpick_ignore_regex"]:
        assert not re.fullmatch(target, "skdp.PrivacyBudget"), target
        assert not re.fullmatch(target, "skdp"), target
