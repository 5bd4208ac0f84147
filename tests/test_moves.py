"""``virtual_cuda/moves.py``: the ways a tensor changes its device in place, as on CUDA (SPEC: "On
CUDA, ``t.data = x`` makes ``t`` the tensor ``x`` is, device included; ``nn.Parameter`` too")."""

import io

import pytest
import torch

import kwshim

from ._subprocess import dynamo_runs


@pytest.fixture
def device():
    with kwshim.activate(device="cuda"):
        yield


def test_data_assignment_moves_a_cpu_tensor_onto_the_device_and_keeps_it_the_same_object(device):
    t = torch.tensor([1.0, 2.0, 3.0])
    kept = t
    t.data = torch.tensor([4.0, 5.0, 6.0], device="cuda")
    assert t is kept and t.device.type == "cuda" and t.is_cuda and t.tolist() == [4.0, 5.0, 6.0]
    assert (t + torch.ones(3, device="cuda")).tolist() == [5.0, 6.0, 7.0]  # mixing with device tensors works


def test_liger_s_weight_data_assignment_gives_a_device_parameter_its_module_and_optimizer_still_hold(device):
    """Liger's chunked-loss tests: ``lin.weight.data = torch.randn(V, H, device="cuda")``."""
    if not dynamo_runs():  # an optimizer's constructor imports Dynamo; whether it imported hung on test order
        pytest.skip("torch's optimizers import Dynamo, which does not import beside this Triton (2.x)")
    lin = torch.nn.Linear(3, 2, bias=False)
    weight = lin.weight
    optimizer = torch.optim.SGD(lin.parameters(), lr=1.0)
    lin.weight.data = torch.ones(2, 3, device="cuda")
    assert lin.weight is weight and isinstance(weight, torch.nn.Parameter) and weight.device.type == "cuda"
    assert weight.requires_grad and optimizer.param_groups[0]["params"][0] is weight
    out = lin(torch.ones(1, 3, device="cuda"))
    assert out.device.type == "cuda" and out.tolist() == [[3.0, 3.0]]
    out.sum().backward()
    assert weight.grad.device.type == "cuda" and weight.grad.tolist() == [[1.0] * 3] * 2
    optimizer.step()
    assert weight.tolist() == [[0.0] * 3] * 2


def test_data_assignment_of_a_cpu_tensor_moves_a_device_parameter_back_and_a_same_device_one_is_torch_s(device):
    p = torch.nn.Parameter(torch.ones(2, device="cuda"))
    p.data = torch.zeros(2)
    assert isinstance(p, torch.nn.Parameter) and p.device.type == "cpu" and p.requires_grad
    q = torch.nn.Parameter(torch.ones(2, device="cuda"))
    q.data = torch.full((2,), 3.0, device="cuda")
    assert q.device.type == "cuda" and q.tolist() == [3.0, 3.0]


def test_torch_load_places_what_it_loads_where_map_location_says(device):
    buffer = io.BytesIO()
    torch.save({"x": torch.tensor([1.0, 2.0]), "lin": torch.nn.Linear(2, 2).state_dict()}, buffer)
    for location, kind in (("cuda", "cuda"), ("cuda:0", "cuda"), (torch.device("cuda"), "cuda"), (0, "cuda"),
                           ("cpu", "cpu"), (None, "cpu")):
        buffer.seek(0)
        loaded = torch.load(buffer, map_location=location)
        assert loaded["x"].device.type == kind and loaded["lin"]["weight"].device.type == kind, location
    saved_on_device = io.BytesIO()
    torch.save(torch.tensor([3.0], device="cuda"), saved_on_device)
    saved_on_device.seek(0)
    assert torch.load(saved_on_device, map_location="cpu").device.type == "cpu"


def test_data_and_load_are_torch_s_own_after_the_switch():
    before = (torch.Tensor.__dict__.get("data"), torch.load)
    with kwshim.activate(device="cuda"):
        assert torch.load is not before[1]
    assert (torch.Tensor.__dict__.get("data"), torch.load) == before
    t = torch.zeros(1)
    t.data = torch.ones(1)
    assert t.tolist() == [1.0]


def _without_values(answer):
    """An answer without its tensors' values (a module's are random), for the cases that draw them."""
    if isinstance(answer, dict):
        return {key: _without_values(value) for key, value in answer.items() if key != "values"}
    if isinstance(answer, list):
        return [_without_values(value) for value in answer]
    return answer


def test_every_way_a_tensor_changes_device_leaves_what_the_h200_left(device):
    """``parity/device_moves.py`` on the H200 (torch 2.11, CUDA 13.0): ``.data`` assignment both ways
    and on parameters, ``set_`` (refused across devices), ``copy_`` across, ``Module.to``/``cpu``/
    ``_apply``, ``load_state_dict`` (copying and ``assign=True``), ``torch.load(map_location=...)``,
    ``pin_memory``, ``non_blocking`` both ways (a copy to the CPU lands in pinned memory),
    ``share_memory_``."""
    import json
    import os

    from parity import device_moves

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "parity", "device_moves_h200.json")) as recorded:
        h200 = json.load(recorded)["answers"]
    ours = json.loads(json.dumps(device_moves.results(torch)))
    assert set(ours) == set(h200)
    for name, answer in h200.items():
        if name.startswith("module"):
            assert _without_values(ours[name]) == _without_values(answer), name
        elif "raises" in answer:
            assert ours[name]["raises"] == answer["raises"], name
            assert ours[name]["message"].startswith(answer["message"]), name
        else:
            assert ours[name] == answer, name


def test_a_file_saved_on_the_h200_loads_onto_the_device_where_it_was_saved_from(device):
    """``parity.device_moves.save_on_gpu``'s file (CUDA storages, saved on the H200): torch alone
    fails ("Storage device not recognized: cuda"); here its GPU tensors are device tensors, its CPU
    tensor a CPU tensor, and ``map_location="cpu"`` puts them all on the CPU."""
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "saved_on_cuda.pt")
    loaded = torch.load(path)
    assert loaded["x"].device.type == "cuda" and loaded["x"].tolist() == [1.5, 2.5]
    assert loaded["cpu"].device.type == "cpu" and loaded["state"]["weight"].device.type == "cuda"
    assert loaded["state"]["weight"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    on_cpu = torch.load(path, map_location="cpu")
    assert {on_cpu["x"].device.type, on_cpu["state"]["weight"].device.type} == {"cpu"}
