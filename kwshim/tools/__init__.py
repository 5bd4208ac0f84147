"""The tools that look at code and environments without running kernels: ``check`` (static; no
Triton), ``doctor`` and the ``probe`` it runs in subprocesses."""
