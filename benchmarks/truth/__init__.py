"""Ground-truth benchmark: small training steps with one injected cost each, and a scorer.

``cases.py`` holds the case table and the step programs, ``generate.py`` measures and captures
them (``worker.py`` is the per-process part), ``score.py`` checks the analysis against them.
"""
