"""Measurements of compiled Triton on a GPU, each beside the same run under kwshim on the CPU."""


def print_record(results, **options):
    """The ``main`` of a script whose ``results(device)`` runs its cases: on a GPU (``cuda``), or
    with ``--kwshim`` on the CPU under the switch; prints the record as JSON with the Triton release
    (``options``: ``json.dumps``'s)."""
    import json
    import sys

    import triton

    if "--kwshim" in sys.argv:
        import kwshim

        with kwshim.activate():
            found = results("cpu")
    else:
        found = results("cuda")
    print(json.dumps({"triton": triton.__version__, "results": found}, **options))
