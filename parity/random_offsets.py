"""How far CUDA's random offset advances for one random operation, by size and dtype: the rule the
virtual device's ``random_state.offset_increment`` follows (torch's ``calc_execution_policy``).
Measured on an H100 (132 SMs, as the H200): 4 per 256 x 1,056 x 4 elements (1,081,344), in fp32,
fp16 and bf16 alike; fp64 draws two values a call, so 4 per half as many.

    python -m parity.random_offsets > parity/random_offsets_h100.json   # on a GPU (an H100: 132 SMs, as the H200)
"""

import json
import sys

SIZES = [1, 4, 1000, 4096, 1081344, 1081345, 4_000_000, 16_000_000]


def increments(torch):
    found = {}
    operations = {
        "rand fp32": lambda n: torch.rand(n, device="cuda"),
        "randn fp32": lambda n: torch.randn(n, device="cuda"),
        "rand fp64": lambda n: torch.rand(n, device="cuda", dtype=torch.float64),
        "randn fp16": lambda n: torch.randn(n, device="cuda", dtype=torch.float16),
        "dropout fp32": lambda n: torch.nn.functional.dropout(torch.ones(n, device="cuda"), 0.5),
        "normal_ bf16": lambda n: torch.empty(n, device="cuda", dtype=torch.bfloat16).normal_(),
    }
    for name, make in operations.items():
        found[name] = {}
        for size in SIZES:
            torch.cuda.manual_seed(0)
            make(size)
            torch.cuda.synchronize()
            found[name][str(size)] = torch.cuda.get_rng_state().view(torch.int64).tolist()[1]
    return found


def main():
    import torch

    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "sms": torch.cuda.get_device_properties(0).multi_processor_count,
               "offset after one operation of n elements": increments(torch)}, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
