"""roscope: tracing and latency analysis for ROS 2 and ROS 1 systems.

The heavy lifting (CTF decoding, event -> model building) is in the Rust core,
``roscope._core``; this package holds the CLI, the Python API and the analyses.
"""
try:  # one version source, Cargo.toml's [workspace.package] version: the core is built with it
    from roscope._core import __version__ as __version__
except ImportError:  # a core built before it exported its version: the installed package's metadata
    from importlib.metadata import version as _dist_version

    __version__ = _dist_version("roscope")


def open(trace_or_db, **kwargs):  # noqa: A001 - roscope.open is the API's entry point
    """Opens a trace (loaded in memory) or a database written by `roscope load`.

    Returns a `roscope.db.Database`: `.sql(query)` and `.table(name)` give
    pandas DataFrames.
    """
    from roscope.db import open as _open

    return _open(trace_or_db, **kwargs)
