"""Damaged copies of traces: what a reader of one must name in its error."""
from __future__ import annotations

import shutil
from pathlib import Path


def copy_with_cut_metadata(src: str, dst) -> Path:
    """A copy of the trace `src` at `dst` whose metadata file is cut in half; returns that
    file (what a reader of the copy must name in its error)."""
    shutil.copytree(src, dst)
    (meta,) = list(Path(dst).rglob("metadata"))
    meta.chmod(0o644)
    meta.write_bytes(meta.read_bytes()[:meta.stat().st_size // 2])
    return meta
