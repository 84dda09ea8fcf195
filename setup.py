"""Build step for the compiled parts: the Kineto event scanner (traceview/readers/_kineto_scan.c),
the XPlane event decoder (traceview/readers/_xplane_wire.c) and the builder's nesting pass
(traceview/_passes.c).

Everything else is declared in pyproject.toml. The extensions are optional: where they cannot be
compiled (no C compiler), the install goes on and traces are decoded in Python (msgspec for
Kineto JSON, array passes over the wire bytes for XPlane) and nested by array passes, which give
the same timelines, only slower.

They are built with -O3 unless CFLAGS names an optimisation level of its own: the compiler takes
the last -O it is given and an extension's own flags come after CFLAGS, so an -O3 here would
override a debug or sanitizer build's ``CFLAGS="-O1 -g -fsanitize=address"`` (tests/test_sanitizers.py).
"""

import os
import shlex

from setuptools import Extension, setup

user_sets_optimisation = any(flag.startswith("-O") for flag in shlex.split(os.environ.get("CFLAGS", "")))

setup(
    ext_modules=[
        Extension(
            module,
            sources=[module.replace(".", "/") + ".c"],
            extra_compile_args=[] if user_sets_optimisation else ["-O3"],
            optional=True,
        )
        for module in ("traceview.readers._kineto_scan", "traceview.readers._xplane_wire", "traceview._passes")
    ]
)
