"""A module whose attribute a kernel of ``tests/test_replay.py`` reads (``replay_settings.SCALE``)."""

SCALE = 1.5
