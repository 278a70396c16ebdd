"""roscope: instrument rclpy as it is imported (put on PYTHONPATH by `roscope record`).

With $ROSCOPE_RCLPY_HOOK set (roscope record sets it when it preloads its ROS 2 tracer
library), installs an import hook that patches rclpy's modules right after each is imported
(roscope_rclpy.py), then runs the sitecustomize module this one shadows, if any.
"""
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


class _RclpyFinder(importlib.abc.MetaPathFinder):
    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                loader = spec.loader
                orig_exec = loader.exec_module

                def exec_module(module, _orig=orig_exec, _name=name):
                    _orig(module)
                    try:
                        import roscope_rclpy
                        roscope_rclpy.patch(_name, module)
                    except Exception as e:  # never break the traced program
                        sys.stderr.write(f"roscope: rclpy instrumentation of {_name} failed: {e!r}\n")
                loader.exec_module = exec_module
                return spec
        return None


if os.environ.get("ROSCOPE_RCLPY_HOOK"):
    if _HERE not in sys.path:
        sys.path.append(_HERE)
    import roscope_rclpy as _hook
    sys.meta_path.insert(0, _RclpyFinder(set(_hook.PATCHES)))

# Chain to the sitecustomize this file shadows.
for _p in sys.path:
    if os.path.abspath(_p or ".") == _HERE:
        continue
    _cand = os.path.join(_p or ".", "sitecustomize.py")
    if os.path.isfile(_cand):
        _spec = importlib.util.spec_from_file_location("_roscope_next_sitecustomize", _cand)
        _mod = importlib.util.module_from_spec(_spec)
        try:
            _spec.loader.exec_module(_mod)
        except Exception as e:
            sys.stderr.write(f"roscope: {_cand} failed: {e!r}\n")
        break
