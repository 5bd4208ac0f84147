"""The README's Python blocks run verbatim (each in a fresh interpreter, as a reader would paste it)."""

import os
import re
import subprocess
import sys

import pytest

from ._subprocess import inherited_pythonpath
from .kernels import needs_block_loads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "README.md")) as _readme:
    BLOCKS = re.findall(r"^```python\n(.*?)^```", _readme.read(), re.M | re.S)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


@needs_block_loads
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_a_readme_python_block_runs_verbatim(index, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *inherited_pythonpath()])
    script = tmp_path / f"block{index}.py"
    script.write_text(BLOCKS[index])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)
    block = BLOCKS[index]
    decorated_outside_the_switch = "kwshim.activate(" not in block or (
        block.find("@triton.autotune") < block.find("kwshim.activate("))
    if done.returncode != 0 and "active drivers" in done.stderr and decorated_outside_the_switch:
        pytest.skip("a plain @triton.autotune needs a GPU driver at decoration on this release (3.2-3.3), "
                    "as the README's Limitations say")
    assert done.returncode == 0, f"README block {index}:\n{BLOCKS[index]}\n{done.stderr[-2000:]}"
