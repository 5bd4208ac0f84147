"""Measurements of compiled Triton on a GPU, each beside the same run under kwshim on the CPU."""


def print_record(results, **options):
    """The ``main`` of a script whose ``results(device)`` runs its cases: on a GPU (``cuda``), or
    with ``--kwshim`` on the CPU under the switch; prints the record as JSON with the Triton release
    and, on a GPU, the GPU's name (``options``: ``json.dumps``'s)."""
    import json
    import sys

    import triton

    record = {"triton": triton.__version__}
    if "--kwshim" in sys.argv:
        import kwshim

        with kwshim.activate():
            record["results"] = results("cpu")
    else:
        import torch

        record["gpu"] = torch.cuda.get_device_name()
        record["results"] = results("cuda")
    print(json.dumps(record, **options))


def on_device(compute, argv=None, flag="--kwshim"):
    """``compute()`` as it runs: on a GPU, or with ``flag`` among ``argv`` (``sys.argv``) under the
    virtual CUDA device, where its ``"cuda"`` tensors are kwshim's."""
    import sys

    if flag not in (sys.argv if argv is None else argv):
        return compute()
    import kwshim

    with kwshim.activate(device="cuda"):
        return compute()


def print_device_record(results):
    """The ``main`` of a script whose ``results()`` runs its cases on ``"cuda"``: on a GPU, or with
    ``--kwshim`` under the virtual device; prints them as JSON with the Triton and torch releases."""
    import json

    import torch
    import triton

    found = on_device(results)
    print(json.dumps({"triton": triton.__version__, "torch": torch.__version__, "results": found}, sort_keys=True))


def digest(tensor):
    """The first 16 hex digits of the SHA-256 of a tensor's bytes: a large result's bits, compared."""
    import hashlib

    import torch

    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()[:16]


def packed_bits(tensor, as_type):
    """A result's bit patterns (``as_type``: ``torch.int16`` or ``torch.int32``), base64 of their
    little-endian bytes: a large result's record in a third of the JSON a list of ints takes."""
    import base64

    flat = tensor.detach().cpu().contiguous().reshape(-1).view(as_type).numpy()
    return base64.b64encode(flat.astype(flat.dtype.newbyteorder("<")).tobytes()).decode()


def unpacked_bits(torch, text, as_type):
    """``packed_bits``' text as a tensor of ``as_type``."""
    import base64

    import numpy as np

    dtype = {torch.int16: "<i2", torch.int32: "<i4"}[as_type]
    return torch.from_numpy(np.frombuffer(base64.b64decode(text), dtype=dtype).astype(dtype[1:]))
