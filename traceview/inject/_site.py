# The sitecustomize.py that `traceview run` writes into a temporary folder put first on PYTHONPATH
# (traceview.inject.launcher fills in INJECT_DIR). Python imports it at start-up in every process
# of the profiled command. It loads traceview/inject by file path as `_traceview_inject`, so an
# interpreter without traceview installed works too, installs the hook (standard library only),
# and then runs the sitecustomize this file shadows, if there is one.
import os
import sys

INJECT_DIR = None  # replaced by the launcher


def _traceview_install():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_traceview_inject", os.path.join(INJECT_DIR, "__init__.py"), submodule_search_locations=[INJECT_DIR])
    package = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = package
    spec.loader.exec_module(package)
    from _traceview_inject import hook

    hook.install()


def _run_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _traceview_install()
except Exception as err:  # noqa: BLE001 - the script runs unprofiled rather than not at all
    sys.stderr.write(f"traceview: the profiling hook could not be installed ({type(err).__name__}: {err})\n")
try:
    _run_shadowed_sitecustomize()
except Exception as err:  # noqa: BLE001
    sys.stderr.write(f"traceview: the environment's own sitecustomize failed ({type(err).__name__}: {err})\n")
