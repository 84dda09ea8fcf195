"""Build step for the compiled parts: the Kineto event scanner (traceview/readers/_kineto_scan.c),
the XPlane event decoder (traceview/readers/_xplane_wire.c) and the builder's nesting pass
(traceview/_passes.c).

Everything else is declared in pyproject.toml. The extensions are optional: where they cannot be
compiled (no C compiler), the install goes on and traces are decoded in Python (msgspec for
Kineto JSON, array passes over the wire bytes for XPlane) and nested by array passes, which give
the same timelines, only slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            module,
            sources=[module.replace(".", "/") + ".c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
        for module in ("traceview.readers._kineto_scan", "traceview.readers._xplane_wire", "traceview._passes")
    ]
)
