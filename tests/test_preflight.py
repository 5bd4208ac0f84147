"""What the doors check before switching on (``doors/preflight.py``)."""


def test_the_real_store_probe_launches_and_finds_this_environment_healthy(monkeypatch):
    """The probe launches only under numpy 2; made to launch here (numpy < 2), it finds stores working."""
    import numpy

    from kwshim import compat
    from kwshim.doors import preflight

    probed = []
    real = compat.jit_makes_interpreted

    def counting():
        probed.append(1)
        return real()

    monkeypatch.setattr(numpy, "__version__", "2.0.0")
    monkeypatch.setattr(compat, "jit_makes_interpreted", counting)
    assert preflight.interpreter_store_problem() is None and probed == [1]
