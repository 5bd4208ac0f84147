"""The README and the docs site (``docs/``): every code block runs, the settings tables are
``settings.FIELDS``', every exception is listed, and the site builds with warnings as errors.

How a block runs, by its language:

- ``python``: verbatim, in a fresh interpreter, in a scratch directory, as a reader would paste it:
  the README's under every release, the docs site's under the shell blocks' release (the contract
  suite covers the rest of the releases);
- ``sh``: in one bash, in the checkout, line by line, each line's exit status checked (a line
  starting ``!`` must fail). Three kinds of line are checked without running: ``make TARGET``
  (``make -n``: the target and its recipe exist; they install or measure for minutes), ``pip
  install`` (every requirement parses; it would install into the test's environment) and a line
  naming the reader's own files (``~/``: ``bash -n``). The shell blocks run under one release, the
  demo's (3.0.0, which ``make demo`` and ``make test-quick`` install), in the matrix row of that
  release; a block that selects a Triton release (``PYTHONPATH=$PWD/.triton/X``) runs in X's row;
- ``yaml``: parsed; ``text``: output shown, not code.
"""

import glob
import os
import re
import shlex
import subprocess
import sys

import pytest

from ._subprocess import environment, inherited_pythonpath
from .kernels import needs_block_loads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md", "CONTRIBUTING.md"] + sorted(os.path.relpath(p, ROOT)
                                                  for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                     recursive=True))
LANGUAGES = {"python", "sh", "yaml", "text"}
#: The release the shell blocks run under (the Makefile's DEMO_TRITON).
SHELL_TRITON = "3.0.0"


def _blocks():
    found = []
    for page in PAGES:
        with open(os.path.join(ROOT, page)) as handle:
            text = handle.read()
        for number, (language, body) in enumerate(re.findall(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)):
            found.append(pytest.param(page, language, body, id=f"{page}:{number}"))
    return found


BLOCKS = _blocks()


def _run_python(body, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *inherited_pythonpath()])
    script = tmp_path / "block.py"
    script.write_text(body)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)
    decorated_outside_the_switch = "kwshim.activate(" not in body or (
        body.find("@triton.autotune") < body.find("kwshim.activate("))
    if done.returncode != 0 and "active drivers" in done.stderr and decorated_outside_the_switch:
        pytest.skip("a plain @triton.autotune needs a GPU driver at decoration on this release (3.2-3.3), "
                    "as the limitations say")
    assert done.returncode == 0, f"{body}\n{done.stderr[-2000:]}"


def _installed_triton():
    from importlib import metadata

    return metadata.version("triton")


def _sh_script(body):
    """The block as a bash script: each line run and its exit status checked, or checked statically."""
    lines = ["set -u", f"cd {shlex.quote(ROOT)}"]
    for number, line in enumerate(body.splitlines(), 1):
        command = line.split("  #")[0].strip()
        if not command or command.startswith("#"):
            continue
        expect_failure = command.startswith("! ")
        command = command[2:] if expect_failure else command
        words = shlex.split(command, comments=True)
        if words and words[0] == "make":
            command = f"make -n {' '.join(shlex.quote(w) for w in words[1:])} > /dev/null"
            expect_failure = False
        elif "pip" in words and "install" in words:
            command = _requirements_parse(words[words.index("install") + 1:])
            expect_failure = False
        elif "~/" in command:
            command = f"bash -n -c {shlex.quote(command)}"
            expect_failure = False
        succeeded, failed = (shlex.quote(f"line {number} {what}: {line}") for what in ("succeeded", "failed"))
        check = (f"if {command}; then echo {succeeded} >&2; exit 1; fi" if expect_failure
                 else f"{command} || {{ echo {failed} >&2; exit 1; }}")
        lines.append(check)
    return "\n".join(lines) + "\n"


#: pip options whose value is the next word
_PIP_VALUED = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-r", "-c", "--target", "-e"}


def _requirements_parse(words):
    """A command that parses every requirement of a ``pip install`` (paths and options aside)."""
    requirements, skip = [], False
    for word in words:
        if skip or word.startswith("-"):
            skip = word in _PIP_VALUED
            continue
        if not word.startswith((".", "/", "~")):
            requirements.append(word)
    code = "import sys; from packaging.requirements import Requirement; [Requirement(r) for r in sys.argv[1:]]"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} " + " ".join(shlex.quote(r) for r in requirements)


def _run_sh(body):
    pinned = re.search(r"PYTHONPATH=(?:\$PWD/)?\.triton/([\w.]+)", body)
    release = pinned.group(1) if pinned else SHELL_TRITON
    if release != _installed_triton():
        pytest.skip(f"the shell blocks run under Triton {release}, in that release's row")
    if pinned and not os.path.isdir(os.path.join(ROOT, ".triton", release)):
        pytest.skip(f"the block selects .triton/{release}, which this checkout has not installed")
    if not os.path.exists(os.path.join(ROOT, ".venv", "bin", "python")):
        pytest.skip("the blocks use the checkout's .venv (make demo or make test makes it)")
    done = subprocess.run(["bash", "-c", _sh_script(body)], capture_output=True, text=True, cwd=ROOT,
                          env=environment(TRITON_INTERPRET="1"), timeout=600)
    assert done.returncode == 0, f"{body}\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"


@needs_block_loads
@pytest.mark.parametrize("page, language, body", BLOCKS)
def test_a_code_block_runs(page, language, body, tmp_path):
    assert language in LANGUAGES, f"{page}: a ```{language} block: say what it is ({', '.join(sorted(LANGUAGES))})"
    if language == "python":
        if page != "README.md" and _installed_triton() != SHELL_TRITON:
            pytest.skip(f"the docs site's Python blocks run under Triton {SHELL_TRITON}, in that release's row")
        _run_python(body, tmp_path)
    elif language == "sh":
        _run_sh(body)
    elif language == "yaml":
        import yaml

        assert yaml.safe_load(body) is not None


def test_the_readme_is_short_and_has_the_two_set_up_commands():
    with open(os.path.join(ROOT, "README.md")) as handle:
        text = handle.read()
    assert len(text.splitlines()) <= 200
    assert "make demo" in text and "make test" in text
    python = [body for page, language, body in (block.values for block in BLOCKS)
              if (page, language) == ("README.md", "python")]
    assert len(python) >= 2


def test_what_the_readme_runs_after_make_demo_is_what_make_demo_installs():
    """The quick start runs right after ``make demo`` (no ``make test``): every ``.venv/bin/python -m
    MODULE`` it shows is a module that ``make demo``'s environment (the Makefile's ``.base`` step) has."""
    with open(os.path.join(ROOT, "Makefile")) as handle:
        recipe = re.search(r"^\$\(VENV\)/\.base:.*?\n((?:\t.*\n)+)", handle.read(), re.M).group(1)
    installed = {re.split(r"[<>=\[]", word.strip("'\""))[0].lower()
                 for line in recipe.splitlines() if "pip install" in line for word in line.split()[5:]}
    with open(os.path.join(ROOT, "README.md")) as handle:
        after_demo = handle.read().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    modules = set(re.findall(r"\.venv/bin/python -m (\w+)", after_demo))
    assert modules, "the quick start runs no module"
    missing = {module for module in modules - {"pip"}  # a venv has pip
               if module not in installed and module not in sys.stdlib_module_names}
    assert not missing, f"the quick start runs {sorted(missing)}, which make demo does not install"


def test_the_ci_page_says_when_workers_pay_off_on_a_small_runner():
    """``-n auto`` on 2 cores can be twice as slow as one process: the CI how-to says so where it
    recommends it."""
    with open(os.path.join(ROOT, "docs", "how-to", "ci.md")) as handle:
        text = handle.read()
    recommended = text.index("`-n auto`")
    assert "2 cores" in text[recommended:recommended + 600] and "`-n 0`" in text[recommended:recommended + 600]


def test_no_page_shows_a_directive_that_markdown_does_not_read():
    """``.. versionadded::`` is reStructuredText: on the site it is raw text."""
    for page in PAGES:
        with open(os.path.join(ROOT, page)) as handle:
            assert ".. versionadded::" not in handle.read(), page


def test_the_api_page_documents_every_public_name():
    import kwshim

    with open(os.path.join(ROOT, "docs", "reference", "api.md")) as handle:
        text = handle.read()
    documented = set(re.findall(r"^::: kwshim\.(\w+)$", text, re.M))
    errors = {name for name in kwshim.__all__ if name.endswith("Error")}
    assert "errors" in documented or errors <= documented
    assert set(kwshim.__all__) - errors - {"__version__"} <= documented, set(kwshim.__all__) - documented


def test_the_settings_tables_are_made_from_the_fields():
    sys.path.insert(0, os.path.join(ROOT, "measure"))
    try:
        import settings_table
    finally:
        sys.path.remove(os.path.join(ROOT, "measure"))
    for page in settings_table.PAGES:
        with open(os.path.join(ROOT, page)) as handle:
            text = handle.read()
        assert f"<!-- settings:begin -->\n{settings_table.table()}\n<!-- settings:end -->" in text, (
            f"{page}: run measure/settings_table.py")


def test_every_exception_is_in_the_errors_reference():
    import kwshim

    with open(os.path.join(ROOT, "docs", "reference", "errors.md")) as handle:
        text = handle.read()
    for name in kwshim.__all__:
        if name.endswith("Error"):
            assert f"`kwshim.{name}`" in text, name


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    mkdocs = os.path.join(os.path.dirname(sys.executable), "mkdocs")
    if not os.path.exists(mkdocs):
        pytest.skip("MkDocs is not installed here (the test extra installs it)")
    done = subprocess.run([mkdocs, "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.parametrize("body, ok", [
    ("true\n! false\nmake -n docs\n", True),
    ("true\nfalse   # a line that fails\n", False),
    ("! true\n", False),
    ("make no-such-target\n", False),
    ("pip install 'kwshim[interpreter] @ git+https://example.invalid/k'\n", True),
    ("pip install 'not a requirement!'\n", False),
])
def test_the_shell_runner_checks_every_line(body, ok):
    done = subprocess.run(["bash", "-c", _sh_script(body)], capture_output=True, text=True, cwd=ROOT)
    assert (done.returncode == 0) is ok, done.stderr
