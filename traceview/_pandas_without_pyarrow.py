"""Imported first by the fork server of a command line whose pandas does not see pyarrow
(pool.py), so that the workers forked from it import pandas the same way
(traceview/pandas_import.py)."""

from traceview.pandas_import import import_pandas_without_pyarrow

import_pandas_without_pyarrow()
