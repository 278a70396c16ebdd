"""roscope: tracing and latency analysis for ROS 2 and ROS 1 systems.

The heavy lifting (CTF decoding, event -> model building) is in the Rust core,
``roscope._core``; this package holds the CLI, the Python API and the analyses.
"""
__version__ = "0.1.0"
