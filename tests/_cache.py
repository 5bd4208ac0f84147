"""Work the suite repeats identically under every Triton release of the matrix (building the sdist
and wheel, installing the wheel into a fresh environment, type-checking), kept in ``.matrix/cache``
(ignored by git) under a digest of what it was made from, so that one ``make test`` does it once.
Every test still runs its own assertions on the result; a changed source is a new digest."""

import functools
import hashlib
import os

from filelock import FileLock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: What the sdist is made from (MANIFEST.in), walked for the digest.
_SOURCES = ("kwshim", "tests", "docs", "examples", "measure", "benchmarks", "parity", ".ci")
_TOP = ("setup.cfg", "setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md", "LICENSE",
        "Makefile", ".pre-commit-hooks.yaml", "mkdocs.yml")
_SKIPPED = ("__pycache__", ".hypothesis", ".mypy_cache", ".pytest_cache")


@functools.lru_cache(maxsize=None)
def source_digest() -> str:
    """A digest of every file the sdist is made from: names and contents."""
    digest = hashlib.sha256()
    paths = [os.path.join(ROOT, name) for name in _TOP if os.path.isfile(os.path.join(ROOT, name))]
    for top in _SOURCES:
        for folder, folders, files in os.walk(os.path.join(ROOT, top)):
            folders[:] = sorted(f for f in folders if f not in _SKIPPED)
            paths += [os.path.join(folder, f) for f in sorted(files) if not f.endswith((".pyc", ".pyo"))]
    for path in paths:
        digest.update(os.path.relpath(path, ROOT).encode() + b"\0")
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]


def cached(name: str, key: str, make) -> str:
    """``.matrix/cache/NAME-KEY``, made by ``make(path)`` the first time (one process at a time:
    xdist workers and matrix rows share it). A folder left half-made is made again."""
    path = os.path.join(ROOT, ".matrix", "cache", f"{name}-{key}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    done = os.path.join(path, ".made")
    with FileLock(path + ".lock"):
        if not os.path.exists(done):
            if os.path.exists(path):
                import shutil

                shutil.rmtree(path)
            os.makedirs(path)
            make(path)
            open(done, "w").close()
    return path
