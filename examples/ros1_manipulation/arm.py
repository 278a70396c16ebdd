"""The 7-DOF arm shared by the example's nodes: Panda-like kinematics (modified DH),
joint limits, sphere obstacles and collision checks, numeric IK, and RRT-Connect in
joint space. Pure numpy; no ROS."""
from __future__ import annotations

import math
import time

import numpy as np

JOINTS = [f"arm_joint{i}" for i in range(1, 8)]
# modified DH (a, d, alpha) per joint, then the flange; Panda's published parameters
DH = [(0.0, 0.333, 0.0), (0.0, 0.0, -math.pi / 2), (0.0, 0.316, math.pi / 2), (0.0825, 0.0, math.pi / 2),
      (-0.0825, 0.384, -math.pi / 2), (0.0, 0.0, math.pi / 2), (0.088, 0.0, math.pi / 2)]
FLANGE = (0.0, 0.107 + 0.10, 0.0)   # flange plus a short tool
LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
LINK_RADIUS = 0.06
# spheres (x, y, z, r) in the base frame: a post beside the reach target and a table top
OBSTACLES = np.array([[0.42, 0.06, 0.52, 0.04], [0.45, -0.15, 0.30, 0.10], [0.10, 0.40, 0.30, 0.10]])
FLOOR_Z = 0.05


def _tf(a, d, alpha, theta):
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -d * sa], [st * sa, ct * sa, ca, d * ca], [0, 0, 0, 1]])


def frames(q) -> list[np.ndarray]:
    """4x4 transforms of the base, each joint frame, and the tool."""
    t = np.eye(4)
    out = [t]
    for (a, d, alpha), th in zip(DH, q):
        t = t @ _tf(a, d, alpha, th)
        out.append(t)
    out.append(t @ _tf(FLANGE[0], FLANGE[1], FLANGE[2], 0.0))
    return out


def points(q) -> np.ndarray:
    return np.array([f[:3, 3] for f in frames(q)])


def tool(q) -> np.ndarray:
    return frames(q)[-1][:3, 3]


def in_collision(q) -> bool:
    """Links as capsules of LINK_RADIUS between consecutive frame origins, against the spheres and the floor."""
    if np.any(q < LOWER) or np.any(q > UPPER):
        return True
    p = points(q)
    a, b = p[:-1], p[1:]
    for s in np.linspace(0.0, 1.0, 5):
        pts = a + (b - a) * s
        d = np.linalg.norm(pts[:, None, :] - OBSTACLES[None, :, :3], axis=2)
        if np.any(d < OBSTACLES[None, :, 3] + LINK_RADIUS):
            return True
        if np.any(pts[2:, 2] < FLOOR_Z):   # the first links stand on the base
            return True
    return False


def segment_free(q1, q2, step: float = 0.05) -> bool:
    n = max(1, int(math.ceil(np.max(np.abs(q2 - q1)) / step)))
    return not any(in_collision(q1 + (q2 - q1) * (i / n)) for i in range(1, n + 1))


def ik(target, seed, tol: float = 0.005, iters: int = 300, rng=None):
    """Damped least squares on the tool position (numeric Jacobian), restarted from random
    seeds until a collision-free solution is found; None if none."""
    rng = rng or np.random.default_rng(0)
    target = np.asarray(target, dtype=float)
    for attempt in range(20):
        q = np.array(seed, dtype=float) if attempt == 0 else rng.uniform(LOWER, UPPER)
        for _ in range(iters):
            e = target - tool(q)
            if np.linalg.norm(e) < tol:
                break
            j = np.empty((3, 7))
            for k in range(7):
                dq = np.zeros(7)
                dq[k] = 1e-5
                j[:, k] = (tool(q + dq) - tool(q)) / 1e-5
            q = np.clip(q + j.T @ np.linalg.solve(j @ j.T + 1e-3 * np.eye(3), e), LOWER, UPPER)
        if np.linalg.norm(target - tool(q)) < tol and not in_collision(q):
            return q
    return None


def rrt_connect(start, goal, rng, step: float = 0.15, max_iters: int = 4000, deadline: float | None = None):
    """RRT-Connect in joint space; returns (path as list of configurations, iterations) or (None, iterations)."""
    trees = [([np.array(start)], [-1]), ([np.array(goal)], [-1])]

    def nearest(tree, q):
        return int(np.argmin(np.linalg.norm(np.array(tree[0]) - q, axis=1)))

    def extend(tree, q):
        i = nearest(tree, q)
        qn = tree[0][i]
        d = q - qn
        dist = np.linalg.norm(d)
        qnew = q if dist <= step else qn + d * (step / dist)
        if not segment_free(qn, qnew):
            return None, False
        tree[0].append(qnew)
        tree[1].append(i)
        return len(tree[0]) - 1, dist <= step

    def path_to(tree, i):
        out = []
        while i != -1:
            out.append(tree[0][i])
            i = tree[1][i]
        return out[::-1]

    for it in range(1, max_iters + 1):
        if deadline is not None and time.monotonic() > deadline:
            return None, it
        a, b = trees if it % 2 else trees[::-1]
        qrand = rng.uniform(LOWER, UPPER)
        ia, _ = extend(a, qrand)
        if ia is None:
            continue
        while True:   # connect: grow b towards the new node until blocked or joined
            ib, reached = extend(b, a[0][ia])
            if ib is None:
                break
            if reached:
                pa, pb = path_to(a, ia), path_to(b, ib)
                path = pa + pb[::-1] if a is trees[0] else pb + pa[::-1]
                return path, it
    return None, max_iters


def shortcut(path, rng, tries: int = 60):
    path = list(path)
    for _ in range(tries):
        if len(path) < 3:
            break
        i, j = sorted(rng.choice(len(path), 2, replace=False))
        if j - i > 1 and segment_free(path[i], path[j]):
            path = path[:i + 1] + path[j:]
    return path


def time_path(path, vmax: float = 0.8) -> list[tuple[float, np.ndarray]]:
    """(time from start, configuration) with each segment at the joint speed limit."""
    t, out = 0.0, [(0.0, path[0])]
    for q1, q2 in zip(path, path[1:]):
        t += max(np.max(np.abs(q2 - q1)) / vmax, 0.05)
        out.append((t, q2))
    return out
