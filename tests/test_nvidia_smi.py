"""``virtual_cuda/nvidia_smi.py``: ``nvidia-smi`` answers as the stated GPU for a suite's subprocesses,
and nothing of it is left after the switch."""

import os
import shutil
import subprocess

import kwshim
from kwshim.virtual_cuda.model import H200


def smi(*args):
    return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=60)


def test_nvidia_smi_answers_as_the_h200_while_the_device_is_on_and_is_gone_after():
    path_before = os.environ.get("PATH")
    with kwshim.activate(device="cuda"):
        found = shutil.which("nvidia-smi")
        assert found is not None and found != shutil.which("nvidia-smi", path=path_before)
        listed = smi("-L")
        assert listed.returncode == 0 and listed.stdout.startswith(f"GPU 0: {H200.name} (UUID: GPU-")
        query = "--query-gpu=name,memory.total,compute_cap"
        assert smi(query, "--format=csv").stdout.splitlines() == [
            "name, memory.total [MiB], compute_cap", f"{H200.name}, 143771 MiB, 9.0"]
        assert smi(query, "--format=csv,noheader,nounits").stdout == f"{H200.name}, 143771, 9.0\n"
        assert smi().returncode == 0 and "kwshim" in smi().stdout
        bad = smi("--query-gpu=bogus", "--format=csv")
        assert bad.returncode == 2 and 'Field "bogus" is not a valid field to query.' in bad.stdout
    assert os.environ.get("PATH") == path_before and not os.path.exists(found)


def test_each_query_answers_as_the_h200_s_nvidia_smi_did():
    """``parity/cuda_state.py``'s ``nvidia-smi`` calls on the H200, against ours: the same lines, the
    GPU's name, UUID and bus id aside (the virtual GPU's name says kwshim, as ``torch.cuda`` does)."""
    import json

    from kwshim.virtual_cuda import nvidia_smi

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "parity", "cuda_state_h200.json")) as recorded:
        h200 = json.load(recorded)["nvidia-smi"]
    real_uuid = h200["-L"]["stdout"].split("UUID: ")[1].rstrip(")\n")
    for command, answer in h200.items():
        if not command:  # the table: a person's, not a program's
            continue
        status, out, _ = nvidia_smi.answer(command.split(), H200)
        expected = answer["stdout"].replace(real_uuid, nvidia_smi.UUID)
        expected = expected.replace("00000000:00:06.0", nvidia_smi.PCI_BUS_ID)
        assert (status, out) == (answer["rc"], expected.replace("NVIDIA H200", H200.name)), command
