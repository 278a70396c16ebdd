"""roscope: instrument rospy when it is imported (put on PYTHONPATH by `roscope record`).

Installs an import hook that patches rospy right after it is imported (see
roscope_rospy.py), then runs the sitecustomize module this one shadows, if any.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


class _RospyFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "rospy":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                loader = spec.loader
                orig_exec = loader.exec_module

                def exec_module(module, _orig=orig_exec):
                    _orig(module)
                    try:
                        if _HERE not in sys.path:
                            sys.path.append(_HERE)
                        import roscope_rospy
                        roscope_rospy.install(module)
                    except Exception as e:  # never break the traced program
                        sys.stderr.write(f"roscope: rospy instrumentation failed: {e!r}\n")
                loader.exec_module = exec_module
                return spec
        return None


if os.environ.get("LD_PRELOAD", "").find("libroscope_ros1") >= 0:
    sys.meta_path.insert(0, _RospyFinder())

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
