"""roscope's version: one source, Cargo.toml's [workspace.package] version, with
which the core is built."""
try:
    from roscope._core import __version__ as __version__
except ImportError:  # a core built before it exported its version: the installed package's metadata
    from importlib.metadata import version as _dist_version

    __version__ = _dist_version("roscope")
