"""The docs site's evidence pages (``docs/evidence/``) are written by the make targets that measure
them: each generator hands its table here, which puts it between the page's markers with the date
and the machine it was measured on."""

import datetime
import os
import platform


def machine() -> str:
    """This machine in one line: CPU model, cores, Python."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            model = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def stamp(command: str) -> str:
    """The line that opens a generated table: what made it, when and where."""
    return f"Measured by `{command}` on {datetime.date.today().isoformat()}, on {machine()}."


def rewrite(path: str, marker: str, text: str) -> None:
    """Put ``text`` between ``<!-- MARKER:begin -->`` and ``<!-- MARKER:end -->`` in ``path``."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    with open(path) as handle:
        page = handle.read()
    if begin not in page or end not in page:
        raise SystemExit(f"{path} has no {begin} ... {end} markers")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as handle:
        handle.write(f"{head}{begin}\n{text.rstrip()}\n{end}{tail}")
