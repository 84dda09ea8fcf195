"""Findings: named rules that grade what a diagnosis or a comparison shows, with evidence and advice.

- :mod:`.spec`: the row type (:class:`~.spec.FindingSpec`): grading, thresholds in words, the
  skipped form, the docs table;
- :mod:`.table`: every finding's row, the diagnosis's and the comparison's (change a threshold here);
- :mod:`.diagnosis`: the rules that grade one trace, each with the sentence that states its evidence;
- :mod:`.comparison`: the rules that explain the gap between two traces.
"""
