"""The launch as compiled Triton binds it: a kernel's parameters bound (``binding``), its launch
options judged by the backend (``options``), its scalars typed (``scalars``), and the launch paths
that put them together (``kernel``)."""
