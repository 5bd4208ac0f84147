"""The settings table of the README and of docs/reference/settings.md, made from ``settings.FIELDS``.

    .venv/bin/python measure/settings_table.py     # rewrites both tables; tests/test_docs.py holds them current
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "measure"))
from kwshim.settings import FIELDS  # noqa: E402
import evidence  # noqa: E402

PAGES = ("README.md", os.path.join("docs", "reference", "settings.md"))


def table() -> str:
    lines = ["| `activate(...)` | `kwshim run` | `pytest` (ini key `kwshim_NAME`) | environment | default | values |",
             "| --- | --- | --- | --- | --- | --- |"]
    for field in FIELDS:
        default = "`none`" if field.name == "device" else f"`{field.default}`"
        if field.default is None and field.kind is float:
            default = "per dtype, as `torch.testing.assert_close`"
        values = ", ".join(f"`{choice}`" for choice in field.choices) or (
            "`True`, `False`" if field.is_switch else "a number >= 0")
        lines.append(f"| `{field.name}=` | `{field.flag()}` | `{field.flag('kwshim-')}` | `{field.variable}` "
                     f"| {default} | {values} |")
    return "\n".join(lines)


def main():
    for page in PAGES:
        evidence.rewrite(os.path.join(ROOT, page), "settings", table())


if __name__ == "__main__":
    main()
