"""Sphinx configuration for the skdp documentation.

Build (warnings are errors)::

    python -m pip install -e ".[doc]"
    python -m sphinx -W -b html doc doc/_build/html
"""

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Document the checkout being built, even when skdp is not installed.
sys.path.insert(0, str(ROOT))

import skdp  # noqa: E402

project = "skdp"
author = "skdp developers"
copyright = "skdp developers"
release = skdp.__version__
version = release

# The MathJax that sphinx.ext.mathjax would load from a CDN comes instead from
# this package (in the ``doc`` extra), which bundles MathJax and points
# ``mathjax_path`` at its local copy. tests/test_docs_offline.py checks it.
OFFLINE_MATH_EXTENSION = "sphinx-mathjax-offline"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # Ships MathJax 3 and copies it into _static/mathjax: the pages render
    # their math offline, with no request to a CDN (see OFFLINE_MATH_EXTENSION).
    OFFLINE_MATH_EXTENSION,
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "generated/*.examples",
    # Left by older builds, which wrote sphinx-gallery's computation-times
    # page: it loads scripts from CDNs (see "write_computation_times").
    "sg_execution_times.rst",
    "auto_examples/sg_execution_times.rst",
]
templates_path = ["_templates"]
default_role = "literal"

# Pages that other parts of skdp add at the top of doc/ join the user guide's
# table of contents when they exist (see add_optional_pages below).
OPTIONAL_USER_GUIDE_PAGES = ("ledger", "model_selection", "audit")

# CHANGELOG.md is included without its "# Changelog" title.
suppress_warnings = ["myst.header"]

# -- API reference ----------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- Cross-references ------------------------------------------------------------
# Every reference must resolve (``-n`` is on): a reference to a private helper
# is written as a literal (``skdp.accounting._pld.pld_laplace``), not a role.
nitpicky = True
# Other projects' objects cannot resolve: intersphinx would fetch their
# inventories over the network, and the docs build offline. Ignored by
# package, for every role; nothing of skdp is ignored here.
THIRD_PARTY_PACKAGES = (
    "sklearn",
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "joblib",
    "diffprivlib",
    # The standard library (os.urandom, warnings.warn, pickle).
    "os",
    "warnings",
    "pickle",
)
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(THIRD_PARTY_PACKAGES)})(\..+)?"),
]

# -- Gallery ------------------------------------------------------------------
# Examples run while the docs build, at full size (the test suite runs them
# shrunk with SKDP_EXAMPLES_FAST=1).
os.environ.pop("SKDP_EXAMPLES_FAST", None)
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",
    "ignore_pattern": r"(__init__|_common)\.py$",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "plot_gallery": "True",
    # The computation-times page loads jQuery and DataTables from CDNs; the
    # docs make no remote request, so it is not written.
    "write_computation_times": False,
}

# -- HTML ---------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"skdp {release}"
html_static_path = ["_static"]
# Wide blocks (budget.summary() ledgers) scroll or, on paper, wrap.
html_css_files = ["skdp.css"]
html_theme_options = {
    "description": "Differential privacy that drops into scikit-learn",
    "fixed_sidebar": True,
    "page_width": "1100px",
}


# -- Every public name is documented -------------------------------------------
PUBLIC_MODULES = (
    "skdp",
    "skdp.accounting",
    "skdp.accounting.ledgers",
    "skdp.cli",
    "skdp.mechanisms",
    "skdp.datasets",
    "skdp.utils",
    "skdp.exceptions",
    "skdp.linear_model",
    "skdp.synthesis",
    "skdp.model_selection",
    "skdp.audit",
)


def check_api_coverage(app):
    """Warn (an error under ``-W``) for a public name missing from api.rst."""
    import importlib

    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    text = (Path(app.srcdir) / "api.rst").read_text(encoding="utf-8")
    for module_name in PUBLIC_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in getattr(module, "__all__", []):
            if name.startswith("__"):
                continue
            if not re.search(rf"(?<![\w.]){re.escape(name)}\b", text):
                logger.warning(
                    f"{module_name}.{name} is public but not in doc/api.rst; "
                    "add it to an autosummary there."
                )


def add_optional_pages(app, docname, source):
    """Append the optional top-level pages that exist to the user guide."""
    if docname != "user_guide/index":
        return
    present = [
        page
        for page in OPTIONAL_USER_GUIDE_PAGES
        if (Path(app.srcdir) / f"{page}.rst").exists()
    ]
    if present:
        entries = "".join(f"   /{page}\n" for page in present)
        source[0] += f"\n.. toctree::\n   :maxdepth: 2\n\n{entries}"


def skip_metadata_request_methods(app, what, name, obj, skip, options):
    """Hide scikit-learn's generated ``set_*_request`` methods.

    Their docstrings link to scikit-learn's own glossary, which does not
    exist here; they are documented in scikit-learn's metadata-routing guide.
    """
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    app.connect("builder-inited", check_api_coverage)
    app.connect("autodoc-skip-member", skip_metadata_request_methods)
    app.connect("source-read", add_optional_pages)
