"""What a CUDA build of torch (and Triton's benchmarker) answers to the calls a suite makes beside its
kernels: device indices, legacy tensor types, streams, generators, the version, nvtx, autocast and
``triton.testing.do_bench``. ``parity/cuda_answers_h200.json`` holds what the H200 answered;
``tests/test_virtual_cuda.py`` holds the virtual device to it.

    python -m parity.cuda_answers                                  # on a machine with one NVIDIA GPU
    TRITON_INTERPRET=1 python -m parity.cuda_answers --virtual     # anywhere: the virtual device
"""

import json

from parity import on_device


def _answer(call):
    """``call()``'s value as JSON can hold it, or ``{"raises": its class name}``."""
    try:
        value = call()
    except Exception as exc:  # what it raises is the answer
        return {"raises": type(exc).__name__}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def answers():
    import torch

    x = torch.ones(3, device="cuda")
    stream = torch.cuda.Stream()

    def autocast(read):
        with torch.autocast("cuda"):
            return read()

    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def cast_forward(tensor):
        return f"{tensor.dtype} {torch.is_autocast_enabled('cuda')}"

    def bench():
        import triton.testing

        return isinstance(triton.testing.do_bench(lambda: x + 1, warmup=1, rep=1), float)

    return {
        "randn device=cuda:1": _answer(lambda: torch.randn(4, device="cuda:1")),
        "to cuda:3": _answer(lambda: x.to("cuda:3")),
        "cuda(1)": _answer(lambda: x.cuda(1)),
        "randn device=0 .device.type": _answer(lambda: torch.randn(4, device=0).device.type),
        "to(0) .is_cuda": _answer(lambda: x.to(0).is_cuda),
        "cuda(0) .is_cuda": _answer(lambda: x.cuda(0).is_cuda),
        "type(torch.cuda.FloatTensor) .dtype": _answer(lambda: str(x.double().type(torch.cuda.FloatTensor).dtype)),
        "type('torch.cuda.HalfTensor') .dtype": _answer(lambda: str(x.type("torch.cuda.HalfTensor").dtype)),
        "current_stream().cuda_stream": _answer(lambda: torch.cuda.current_stream().cuda_stream),
        "Stream().cuda_stream is an int": _answer(lambda: isinstance(stream.cuda_stream, int)),
        "Stream().device_index": _answer(lambda: stream.device_index),
        "record_stream": _answer(lambda: x.record_stream(stream)),
        "len(default_generators)": _answer(lambda: len(torch.cuda.default_generators)),
        "default_generators[0].initial_seed() is an int": _answer(
            lambda: isinstance(torch.cuda.default_generators[0].initial_seed(), int)),
        "version.cuda": _answer(lambda: torch.version.cuda),
        "nvtx.range_push": _answer(lambda: torch.cuda.nvtx.range_push("a")),
        "nvtx.range_pop": _answer(lambda: torch.cuda.nvtx.range_pop()),
        "nvtx.mark": _answer(lambda: torch.cuda.nvtx.mark("a")),
        "nvtx.range": _answer(lambda: [None for _ in [torch.cuda.nvtx.range("a").__enter__()]][0]),
        "autocast: is_autocast_enabled('cuda')": _answer(lambda: autocast(lambda: torch.is_autocast_enabled("cuda"))),
        "autocast: get_autocast_dtype('cuda')": _answer(
            lambda: autocast(lambda: str(torch.get_autocast_dtype("cuda")))),
        "autocast: matmul dtype": _answer(lambda: autocast(lambda: str((x[:, None] @ x[None]).dtype))),
        "autocast: custom_fwd cast_inputs fp32": _answer(lambda: autocast(lambda: cast_forward(x.half()))),
        "outside autocast: is_autocast_enabled('cuda')": _answer(lambda: torch.is_autocast_enabled("cuda")),
        "do_bench gives a float": _answer(bench),
    }


def main():
    print(json.dumps(on_device(answers, flag="--virtual"), indent=1))


if __name__ == "__main__":
    main()
