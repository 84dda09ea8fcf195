"""Imported first by the fork server of a command line whose pandas does not see pyarrow
(pool.py), so that the workers forked from it import pandas the same way, if they import it
(traceview/pandas_import.py)."""

from traceview.pandas_import import withhold_pyarrow_from_pandas

withhold_pyarrow_from_pandas()
