"""The benchmark driver: one reach trial. Sends the reach goal to the planner, then the
plan to the controller, and prints one JSON line: T1 planning, T2 execution, T4 total
(ms, wall clock at the driver), or {"status": <failure kind>}. Exit 0 on success.

    python3 driver.py            one trial
    python3 driver.py --ready    exit 0 once both action servers answer (readiness check)
"""
from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "build", "py"))

import actionlib  # noqa: E402
import rospy  # noqa: E402
from geometry_msgs.msg import Point  # noqa: E402
from manip_msgs.msg import FollowTrajectoryAction, FollowTrajectoryGoal, PlanReachAction, PlanReachGoal  # noqa: E402

TARGET = (0.4, 0.2, 0.5)   # m, in the base frame (the seed's reach goal)


def fail(kind: str, **extra) -> int:
    print(json.dumps({"status": kind, **extra}), flush=True)
    return 1


def main() -> int:
    ready_only = "--ready" in sys.argv
    rospy.init_node("arm_benchmark", anonymous=True, disable_signals=True)
    plan = actionlib.SimpleActionClient("plan_reach", PlanReachAction)
    follow = actionlib.SimpleActionClient("follow_trajectory", FollowTrajectoryAction)
    for c in (plan, follow):
        if not c.wait_for_server(rospy.Duration(2.0 if ready_only else 10.0)):
            return 1 if ready_only else fail("server_unavailable")
    if ready_only:
        return 0
    t0 = time.monotonic()
    plan.send_goal(PlanReachGoal(target=Point(*TARGET), tolerance=0.005))
    if not plan.wait_for_result(rospy.Duration(10.0)):
        return fail("planning_timeout")
    t1 = time.monotonic()
    pr = plan.get_result()
    if pr is None or not pr.success:
        return fail("planning_failed", reason=pr.message if pr else "no result", T1=(t1 - t0) * 1e3)
    follow.send_goal(FollowTrajectoryGoal(trajectory=pr.trajectory))
    if not follow.wait_for_result(rospy.Duration(20.0)):
        return fail("execution_timeout", T1=(t1 - t0) * 1e3)
    t2 = time.monotonic()
    fr = follow.get_result()
    out = {"T1": (t1 - t0) * 1e3, "T2": (t2 - t1) * 1e3, "T4": (t2 - t0) * 1e3,
           "planner_ms": pr.planning_time * 1e3, "rrt_iterations": pr.iterations,
           "waypoints": len(pr.trajectory.points)}
    if fr is None or not fr.success:
        return fail(fr.message if fr and fr.message in ("control_failed", "goal_tolerance_violated") else "execution_failed",
                    reason=fr.message if fr else "no result", **out)
    out["max_tracking_error_rad"] = fr.max_tracking_error
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
