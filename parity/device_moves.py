"""Every way a tensor changes its device, on a CUDA machine: what each leaves (the tensor's device,
whether it is the same Python object, still a Parameter, its values) or the error it raises.
``tests/test_device_moves.py`` holds the virtual device to these answers
(``parity/device_moves_h100.json``).

    python -m parity.device_moves > parity/device_moves_h100.json   # on a GPU
"""

import io
import json
import sys


def _described(torch, value):
    """What a case left, as plain data: a tensor's device type, class, values; or a module's."""
    if isinstance(value, torch.nn.Module):
        return {"module": {name: _described(torch, p) for name, p in value.named_parameters()}}
    if isinstance(value, torch.Tensor):
        return {"device": value.device.type, "parameter": isinstance(value, torch.nn.Parameter),
                "requires_grad": value.requires_grad, "values": value.detach().cpu().reshape(-1).tolist()[:4],
                "pinned": value.is_pinned() if value.device.type == "cpu" else None}
    if isinstance(value, (tuple, list)):
        return [_described(torch, item) for item in value]
    return repr(value)


def cases(torch, device="cuda"):
    """Each case by name: a function of nothing returning what it left (a tensor, a module, a tuple)."""
    def cpu(*values):
        return torch.tensor(values or (1.0, 2.0, 3.0))

    def on(*values):
        return torch.tensor(values or (4.0, 5.0, 6.0), device=device)

    def data_onto_device():
        t = cpu()
        before = id(t)
        t.data = on()
        return t, id(t) == before, t + on()

    def data_onto_parameter():
        lin = torch.nn.Linear(3, 2, bias=False)
        weight = lin.weight
        lin.weight.data = torch.ones(2, 3, device=device)
        return lin.weight, lin.weight is weight, lin(torch.ones(1, 3, device=device))

    def data_onto_moved_parameter():
        lin = torch.nn.Linear(3, 2, bias=False).to(device)
        lin.weight.data = torch.full((2, 3), 2.0, device=device)
        return lin.weight, lin(torch.ones(1, 3, device=device))

    def data_back_to_cpu():
        t = on()
        t.data = cpu()
        return t, t + cpu()

    def parameter_data_back_to_cpu():
        p = torch.nn.Parameter(on())
        p.data = cpu()
        return p

    def set_from_device():
        t = cpu()
        t.set_(on())
        return t

    def copy_across():
        t = cpu()
        t.copy_(on())
        d = on()
        d.copy_(cpu(7.0, 8.0, 9.0))
        return t, d

    def module_to_and_back():
        lin = torch.nn.Linear(3, 2)
        weight = lin.weight
        lin.to(device)
        moved = lin.weight is weight
        lin.cpu()
        return lin, moved, lin.weight is weight

    def module_apply():
        lin = torch.nn.Linear(3, 2)
        lin._apply(lambda t: t.to(device))
        return lin

    def load_state_dict_of_cpu_tensors():
        lin = torch.nn.Linear(3, 2, bias=False).to(device)
        lin.load_state_dict({"weight": torch.full((2, 3), 3.0)})
        return lin.weight

    def load_state_dict_assign():
        lin = torch.nn.Linear(3, 2, bias=False).to(device)
        lin.load_state_dict({"weight": torch.full((2, 3), 3.0)}, assign=True)
        return lin.weight

    def torch_load_map_location():
        buffer = io.BytesIO()
        torch.save({"x": cpu()}, buffer)
        found = []
        for location in (device, "cpu"):
            buffer.seek(0)
            found.append(torch.load(buffer, map_location=location)["x"])
        buffer = io.BytesIO()
        torch.save({"x": on()}, buffer)
        buffer.seek(0)
        found.append(torch.load(buffer, map_location="cpu")["x"])
        buffer.seek(0)
        found.append(torch.load(buffer)["x"])
        return found

    def pinned():
        t = cpu().pin_memory()
        return t, t.to(device, non_blocking=True)

    def non_blocking_back():
        return on().to("cpu", non_blocking=True)

    def share_memory():
        t = cpu().share_memory_()
        return t, t.is_shared()

    def share_memory_on_device():
        t = on()
        return t.share_memory_(), t.is_shared()

    def requires_grad_kept_through_data():
        p = torch.nn.Parameter(cpu())
        p.data = on()
        (p * 2).sum().backward()
        return p, p.grad

    return {name: function for name, function in locals().items()
            if callable(function) and name not in ("cpu", "on")}


def outcome(torch, case):
    try:
        return {"left": _described(torch, case())}
    except Exception as error:  # noqa: BLE001 - the answer is the error
        return {"raises": type(error).__name__, "message": str(error).strip().splitlines()[0][:200]}


def results(torch, device="cuda"):
    return {name: outcome(torch, case) for name, case in cases(torch, device).items()}


def main():
    import torch

    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "answers": results(torch)}, sys.stdout, indent=1, sort_keys=True)
    print()


def save_on_gpu(path):
    """A file torch saved on the GPU (CUDA storages), for ``torch.load`` on the virtual device."""
    import torch

    lin = torch.nn.Linear(2, 2, bias=False).cuda()
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    torch.save({"x": torch.tensor([1.5, 2.5], device="cuda"), "cpu": torch.tensor([7.0]),
                "state": lin.state_dict()}, path)


if __name__ == "__main__":
    main()
