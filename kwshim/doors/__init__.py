"""The doors into kwshim: ``@kwsafe`` (``decorator``) and ``kwsafe_module`` (``retrofit``), the switch
(``switch``), and the ways to turn it on: ``kwshim run`` (``runner``, ``cli``) and ``pytest --kwshim``
(``pytest_plugin``); ``preflight`` is what each checks first."""
