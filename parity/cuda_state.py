"""What a CUDA machine answers that libraries read besides ``torch.cuda``'s properties: ``nvidia-smi``
(FlagGems finds its vendor by running it), CUDA's random state (FlagGems' Philox helpers read and
advance its seed and offset), and ``torch.autocast("cuda")``'s dtypes for a fp16 input.

    python -m parity.cuda_state > parity/cuda_state_h100.json   # on a GPU
"""

import json
import subprocess
import sys

SMI = [["-L"], ["--query-gpu=name,memory.total,driver_version,compute_cap", "--format=csv"],
       ["--query-gpu=name,memory.total,driver_version,compute_cap", "--format=csv,noheader"],
       ["--query-gpu=name,memory.total,driver_version,compute_cap", "--format=csv,noheader,nounits"],
       ["--query-gpu=index,name,uuid,pci.bus_id", "--format=csv,noheader"], []]


def smi():
    found = {}
    for args in SMI:
        try:
            done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=60)
            found[" ".join(args)] = {"rc": done.returncode, "stdout": done.stdout}
        except Exception as error:  # noqa: BLE001
            found[" ".join(args)] = {"raises": repr(error)}
    return found


def _state(torch, state):
    return {"bytes": len(state), "int64": state.view(torch.int64).tolist() if len(state) % 8 == 0 else None}


def random_state(torch, device="cuda"):
    found = {}
    torch.cuda.manual_seed(0)
    found["after manual_seed(0)"] = _state(torch, torch.cuda.get_rng_state())
    found["initial_seed"] = torch.cuda.initial_seed()
    generator = torch.cuda.default_generators[0]
    found["default_generators[0].get_state()"] = _state(torch, generator.get_state())
    found["default_generators[0] type"] = type(generator).__name__
    torch.randn(4, device=device)
    found["after randn(4)"] = _state(torch, torch.cuda.get_rng_state())
    torch.rand(1000, device=device)
    found["after rand(1000)"] = _state(torch, torch.cuda.get_rng_state())
    torch.nn.functional.dropout(torch.ones(4096, device=device), 0.5)
    found["after dropout(4096)"] = _state(torch, torch.cuda.get_rng_state())
    torch.cuda.manual_seed(0)
    first = torch.randn(4, device=device).cpu().tolist()
    state = torch.cuda.get_rng_state()
    values = state.view(torch.int64).clone()
    values[1] += 4  # the offset: a draw of 4 normals advances it by 4
    torch.cuda.set_rng_state(values.view(torch.uint8))
    found["randn(4) after manual_seed(0)"] = first
    found["randn(4) from the advanced offset"] = torch.randn(4, device=device).cpu().tolist()
    torch.cuda.manual_seed(0)
    torch.randn(4, device=device)
    found["randn(4) after one randn(4)"] = torch.randn(4, device=device).cpu().tolist()
    own = torch.Generator(device=device)
    own.manual_seed(1)
    found["Generator(device).get_state() after manual_seed(1)"] = _state(torch, own.get_state())
    found["Generator(device).device"] = str(own.device)
    torch.manual_seed(5)
    found["cuda initial_seed after torch.manual_seed(5)"] = torch.cuda.initial_seed()
    return found


def autocast(torch, device="cuda"):
    x = torch.randn(8, 16, device=device)
    w = torch.randn(16, 16, device=device)
    ops = {
        "mm": lambda: x @ w,
        "linear": lambda: torch.nn.functional.linear(x, w),
        "layer_norm": lambda: torch.nn.functional.layer_norm(x, (16,)),
        "softmax": lambda: torch.softmax(x, -1),
        "log_softmax": lambda: torch.log_softmax(x, -1),
        "exp": lambda: torch.exp(x),
        "sum": lambda: x.sum(),
        "cross_entropy": lambda: torch.nn.functional.cross_entropy(x, torch.zeros(8, dtype=torch.long, device=device)),
        "gelu": lambda: torch.nn.functional.gelu(x),
        "mm then layer_norm": lambda: torch.nn.functional.layer_norm(x @ w, (16,)),
        "mm then softmax": lambda: torch.softmax(x @ w, -1),
        "add of mm and fp32": lambda: (x @ w) + x,
        "rms_norm": lambda: torch.nn.functional.rms_norm(x, (16,)) if hasattr(torch.nn.functional, "rms_norm")
        else None,
        "pow": lambda: x.pow(2),
        "cumsum": lambda: torch.cumsum(x, 0),
    }
    found = {}
    for dtype in ("float16", "bfloat16", "float32"):
        answers = {}
        try:
            with torch.autocast("cuda", dtype=getattr(torch, dtype)):
                for name, op in ops.items():
                    result = op()
                    answers[name] = None if result is None else str(result.dtype).replace("torch.", "")
        except Exception as error:  # noqa: BLE001
            answers = {"raises": type(error).__name__, "message": str(error).splitlines()[0][:200]}
        found[dtype] = answers
    with torch.autocast("cuda"):
        found["default dtype"] = str(torch.get_autocast_dtype("cuda")).replace("torch.", "")
    return found


def main():
    import torch

    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "nvidia-smi": smi(),
               "random state": random_state(torch), "autocast": autocast(torch)},
              sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
