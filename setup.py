"""Build step for the one compiled module: the Kineto event scanner (traceview/readers/_kineto_scan.c).

Everything else is declared in pyproject.toml. The extension is optional: where it cannot be
compiled (no C compiler), the install goes on and traces are decoded by the typed msgspec path,
which gives the same timelines, only slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "traceview.readers._kineto_scan",
            sources=["traceview/readers/_kineto_scan.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
