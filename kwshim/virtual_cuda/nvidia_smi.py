"""``nvidia-smi`` answering as the stated GPU, for the processes a suite starts.

Libraries ask ``nvidia-smi`` which vendor's GPU they run on (FlagGems runs it at import, then each
other vendor's tool; none answering is "No device were detected on your machine !"). While the
device is on, an executable ``nvidia-smi`` that answers as ``model.GPU`` is first on ``PATH``: ``-L``,
``--query-gpu=FIELDS --format=csv[,noheader][,nounits]``, and the plain table. It runs this module
with the interpreter kwshim runs under. The folder and ``PATH`` are as before when the switch goes off.
"""

import os
import sys
import tempfile

__all__ = ["install", "answer", "main"]

#: the ``GPU-`` UUID the virtual GPU reports (fixed, so that a suite's caches keyed on it hold)
UUID = "GPU-6b77a7e5-0000-4b1d-8000-000000000000"
PCI_BUS_ID = "00000000:18:00.0"
#: the driver the virtual GPU reports: the H200's (``parity/cuda_state_h200.json``), which runs CUDA 13.0
DRIVER_VERSION = "580.159.04"


def _fields(gpu):
    """nvidia-smi's query fields: (header, value with its unit, value without it)."""
    mib = gpu.smi_memory_mib
    return {
        "index": ("index", "0", "0"),
        "name": ("name", gpu.name, gpu.name),
        "uuid": ("uuid", UUID, UUID),
        "pci.bus_id": ("pci.bus_id", PCI_BUS_ID, PCI_BUS_ID),
        "driver_version": ("driver_version", DRIVER_VERSION, DRIVER_VERSION),
        "compute_cap": ("compute_cap", f"{gpu.major}.{gpu.minor}", f"{gpu.major}.{gpu.minor}"),
        "count": ("count", "1", "1"),
        "memory.total": ("memory.total [MiB]", f"{mib} MiB", str(mib)),
        "memory.used": ("memory.used [MiB]", "0 MiB", "0"),
        "memory.free": ("memory.free [MiB]", f"{mib} MiB", str(mib)),
        "utilization.gpu": ("utilization.gpu [%]", "0 %", "0"),
        "temperature.gpu": ("temperature.gpu", "30", "30"),
        "clocks.max.sm": ("clocks.max.sm [MHz]", f"{gpu.clock_rate_khz // 1000} MHz", str(gpu.clock_rate_khz // 1000)),
    }


def answer(args, gpu):
    """(exit status, stdout, stderr) of ``nvidia-smi args`` on ``gpu``."""
    if not args:
        return 0, _table(gpu), ""
    if args in (["-L"], ["--list-gpus"]):
        return 0, f"GPU 0: {gpu.name} (UUID: {UUID})\n", ""
    query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
    output = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), None)
    if query is None or output is None:
        return 2, "", f"nvidia-smi (kwshim: the virtual CUDA device) answers -L and --query-gpu=... --format=csv, " \
                      f"not {' '.join(args)}\n"
    known, wanted = _fields(gpu), [name.strip() for name in query.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        return 2, f'Field "{unknown[0]}" is not a valid field to query.\n\n', ""
    options = output.split(",")
    rows = [] if "noheader" in options else [", ".join(known[name][0] for name in wanted)]
    rows.append(", ".join(known[name][2 if "nounits" in options else 1] for name in wanted))
    return 0, "\n".join(rows) + "\n", ""


def _table(gpu):
    mib = gpu.smi_memory_mib
    rule = "+-----------------------------------------------------------------------------------------+"
    return "\n".join([
        rule,
        f"| NVIDIA-SMI {DRIVER_VERSION}             Driver Version: {DRIVER_VERSION}     CUDA Version: 13.0     |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "|=========================================+========================+======================|",
        f"|   0  {gpu.name[:26]:<26}      On  | {PCI_BUS_ID} Off |                    0 |",
        f"| N/A   30C    P0             75W /  700W |       0MiB / {mib:>6}MiB |      0%      Default |",
        "+-----------------------------------------+------------------------+----------------------+",
        "(kwshim: the virtual CUDA device)", ""])


def main(argv=None):
    from .model import H200

    status, out, err = answer(list(sys.argv[1:] if argv is None else argv), H200)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return status


def install(patch) -> None:
    """An ``nvidia-smi`` first on ``PATH`` while the device is on, through ``patch``."""
    folder = tempfile.mkdtemp(prefix="kwshim-nvidia-smi-")
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(folder, "nvidia-smi")
    with open(path, "w") as handle:
        handle.write(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {package_root!r})\n"
                     f"from kwshim.virtual_cuda.nvidia_smi import main\nsys.exit(main())\n")
    os.chmod(path, 0o755)
    patch.on_undo(lambda: _removed(folder))
    patch.setitem(os.environ, "PATH", folder + os.pathsep + os.environ.get("PATH", ""))


def _removed(folder):
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
