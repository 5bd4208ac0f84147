"""Resolve every private Triton name kwshim relies on (``kwshim/compat/private_names.py``) under
every release in ``.triton/``, and rewrite that module's ``FOUND`` record.

    .venv/bin/python measure/private_names.py [--releases 3.0.0 3.9.0 ...]

Each release runs in its own process (``PYTHONPATH=.triton/<release>``). Run it when a Triton
release is added to the matrix; ``tests/test_compat.py`` holds each release to the record.
"""

import argparse
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.join(ROOT, "kwshim", "compat", "private_names.py")
BEGIN, END = "# private-names:begin\n", "# private-names:end\n"
PROBE = "import json; from kwshim.compat.private_names import found_here; print(json.dumps(found_here()))"


def release_key(release):
    return tuple(int(part) for part in release.split("."))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    installed = sorted((name for name in os.listdir(os.path.join(ROOT, ".triton"))
                        if os.path.exists(os.path.join(ROOT, ".triton", name, ".installed"))), key=release_key)
    parser.add_argument("--releases", nargs="+", default=installed)
    options = parser.parse_args()
    found = {}
    for release in sorted(options.releases, key=release_key):
        env = dict(os.environ, TRITON_INTERPRET="1",
                   PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, ".triton", release)]))
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
        for name, present in json.loads(done.stdout.strip().splitlines()[-1]).items():
            found.setdefault(name, [])
            if present:
                found[name].append(release)
        print(f"Triton {release}: resolved", flush=True)
    lines = ["FOUND: Dict[str, tuple] = {\n"]
    for name, releases in found.items():
        lines.append(f"    {name!r}:\n")
        wrapped = textwrap.wrap(repr(tuple(releases)) + ",", 110, initial_indent=" " * 8, subsequent_indent=" " * 9)
        lines += [f"{line}\n" for line in wrapped]
    lines.append("}\n")
    with open(MODULE) as handle:
        text = handle.read()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(MODULE, "w") as handle:
        probed = sorted(options.releases, key=release_key)
        probed_lines = "\n".join(textwrap.wrap(f"PROBED = {tuple(probed)!r}", 110, subsequent_indent="          "))
        handle.write(head + BEGIN + probed_lines + "\n" + "".join(lines) + END + tail)


if __name__ == "__main__":
    sys.exit(main())
