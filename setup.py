"""Build step for the compiled decoders: the Kineto event scanner (traceview/readers/_kineto_scan.c)
and the XPlane event decoder (traceview/readers/_xplane_wire.c).

Everything else is declared in pyproject.toml. The extensions are optional: where they cannot be
compiled (no C compiler), the install goes on and traces are decoded in Python (msgspec for
Kineto JSON, array passes over the wire bytes for XPlane), which gives the same timelines, only
slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            f"traceview.readers.{name}",
            sources=[f"traceview/readers/{name}.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
        for name in ("_kineto_scan", "_xplane_wire")
    ]
)
