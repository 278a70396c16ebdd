"""The example's ROS 1 nodes (rospy), one per process: python3 nodes.py sim|planner|controller|state_publisher

- sim: the 7-DOF arm simulator; a timer steps the joint dynamics at a fixed rate
  (first-order velocity response to /arm/command) and publishes /joint_states;
  it also listens to /arm/diagnostics_in_1..4 (what a msg_load flood targets).
- planner: the plan_reach action server: IK for the reach target, RRT-Connect in
  joint space with collision checks against the obstacles, shortcutting, timing.
- controller: the follow_trajectory action server; its control loop (a timer at a
  fixed rate) tracks the trajectory and publishes velocity commands on /arm/command.
- state_publisher: the tool frame on /tf from /joint_states (tf2_ros).
"""
from __future__ import annotations

import sys
import threading
import time

import actionlib
import arm
import numpy as np
import rospy
from geometry_msgs.msg import TransformStamped
from manip_msgs.msg import FollowTrajectoryAction, FollowTrajectoryResult, PlanReachAction, PlanReachResult
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

SIM_RATE = 250.0
CONTROL_RATE = 100.0


def _publish(pub, msg) -> None:
    """Publish, except while the node shuts down (a timer may still fire then)."""
    try:
        pub.publish(msg)
    except rospy.ROSException:
        if not rospy.is_shutdown():
            raise


class ArmSim:
    def __init__(self):
        self.q = arm.HOME.copy()
        self.v = np.zeros(7)
        self.cmd = np.zeros(7)
        self.diag = 0
        self.pub = rospy.Publisher("/joint_states", JointState, queue_size=10)
        rospy.Subscriber("/arm/command", JointState, self.on_command, queue_size=1)
        for i in range(1, 5):
            rospy.Subscriber(f"/arm/diagnostics_in_{i}", String, self.on_diagnostics, queue_size=10)
        self.dt = 1.0 / SIM_RATE
        self.timer = rospy.Timer(rospy.Duration(self.dt), self.step)

    def on_command(self, msg):
        if len(msg.velocity) == 7:
            self.cmd = np.clip(np.array(msg.velocity), -2.0, 2.0)

    def on_diagnostics(self, msg):
        self.diag += len(msg.data) > 0

    def step(self, _event):
        # joint velocity follows the command with a 20 ms time constant; positions integrate it
        self.v += (self.cmd - self.v) * min(1.0, self.dt / 0.02)
        self.q = np.clip(self.q + self.v * self.dt, arm.LOWER, arm.UPPER)
        m = JointState(name=arm.JOINTS, position=self.q.tolist(), velocity=self.v.tolist())
        m.header.stamp = rospy.Time.now()
        _publish(self.pub, m)


class Planner:
    def __init__(self):
        self.q = None
        rospy.Subscriber("/joint_states", JointState, self.on_state, queue_size=1)
        self.rng = np.random.default_rng(int(time.time() * 1e6) % (1 << 32))
        self.server = actionlib.SimpleActionServer("plan_reach", PlanReachAction, self.execute, auto_start=False)
        self.server.start()

    def on_state(self, msg):
        self.q = np.array(msg.position)

    def execute(self, goal):
        t0 = time.monotonic()
        res = PlanReachResult()
        if self.q is None:
            res.message = "no joint state yet"
            self.server.set_aborted(res)
            return
        start = self.q.copy()
        target = [goal.target.x, goal.target.y, goal.target.z]
        qgoal = arm.ik(target, start, tol=goal.tolerance or 0.005, rng=self.rng)
        if qgoal is None:
            res.message = "no collision-free IK solution"
            self.server.set_aborted(res)
            return
        path, iters = arm.rrt_connect(start, qgoal, self.rng, deadline=t0 + 5.0)
        res.iterations = iters
        if path is None:
            res.message = f"RRT-Connect found no path in {iters} iterations"
            self.server.set_aborted(res)
            return
        timed = arm.time_path(arm.shortcut(path, self.rng))
        traj = JointTrajectory(joint_names=arm.JOINTS)
        for t, q in timed:
            traj.points.append(JointTrajectoryPoint(positions=list(q), time_from_start=rospy.Duration(t)))
        res.trajectory, res.success = traj, True
        res.planning_time = time.monotonic() - t0
        res.message = f"{len(path)} waypoints, {len(timed)} after shortcutting"
        self.server.set_succeeded(res)


class Controller:
    KP = 8.0
    MAX_ERROR = 0.35      # rad: tracking error that aborts the execution
    SETTLE = 0.02         # rad: final error to call it done
    SETTLE_TIME = 2.0     # s after the trajectory's end

    def __init__(self):
        self.q = None
        self.lock = threading.Lock()
        self.active = None     # (t0, times, positions, done event, stats dict)
        self.hold = None
        self.pub = rospy.Publisher("/arm/command", JointState, queue_size=1)
        rospy.Subscriber("/joint_states", JointState, self.on_state, queue_size=1)
        self.server = actionlib.SimpleActionServer("follow_trajectory", FollowTrajectoryAction, self.execute, auto_start=False)
        self.server.start()
        self.timer = rospy.Timer(rospy.Duration(1.0 / CONTROL_RATE), self.loop)

    def on_state(self, msg):
        self.q = np.array(msg.position)

    def desired(self, times, pos, t):
        if t >= times[-1]:
            return pos[-1], np.zeros(7)
        i = int(np.searchsorted(times, t, side="right")) - 1
        s = (t - times[i]) / (times[i + 1] - times[i])
        vel = (pos[i + 1] - pos[i]) / (times[i + 1] - times[i])
        return pos[i] + (pos[i + 1] - pos[i]) * s, vel

    def loop(self, _event):
        if self.q is None:
            return
        with self.lock:
            act = self.active
        if act is None:
            if self.hold is None:
                self.hold = self.q.copy()
            qd, vff = self.hold, np.zeros(7)
        else:
            t0, times, pos, done, st = act
            t = time.monotonic() - t0
            qd, vff = self.desired(times, pos, t)
            err = float(np.max(np.abs(qd - self.q)))
            st["max_error"] = max(st["max_error"], err)
            st["progress"] = min(1.0, t / times[-1])
            if err > self.MAX_ERROR:
                st.update(outcome="control_failed", final_error=err)
                done.set()
            elif t >= times[-1] and err < self.SETTLE:
                st.update(outcome="success", final_error=err)
                done.set()
            elif t > times[-1] + self.SETTLE_TIME:
                st.update(outcome="goal_tolerance_violated", final_error=err)
                done.set()
        v = np.clip(vff + self.KP * (qd - self.q), -2.0, 2.0)
        _publish(self.pub, JointState(name=arm.JOINTS, velocity=v.tolist()))

    def execute(self, goal):
        pts = goal.trajectory.points
        res = FollowTrajectoryResult()
        if len(pts) < 2:
            res.message = "a trajectory needs two points"
            self.server.set_aborted(res)
            return
        times = np.array([p.time_from_start.to_sec() for p in pts])
        pos = np.array([p.positions for p in pts])
        done, st = threading.Event(), {"max_error": 0.0, "progress": 0.0}
        with self.lock:
            self.active = (time.monotonic(), times, pos, done, st)
        done.wait(times[-1] + self.SETTLE_TIME + 5.0)
        with self.lock:
            self.active = None
            self.hold = pos[-1] if st.get("outcome") == "success" else (self.q.copy() if self.q is not None else None)
        res.final_error = st.get("final_error", -1.0)
        res.max_tracking_error = st["max_error"]
        res.message = st.get("outcome", "no outcome (control loop stalled)")
        res.success = st.get("outcome") == "success"
        (self.server.set_succeeded if res.success else self.server.set_aborted)(res)


class StatePublisher:
    EVERY = 5   # one transform per 5 joint states (50 Hz at the simulator's 250 Hz)

    def __init__(self):
        import tf2_ros

        self.br = tf2_ros.TransformBroadcaster()
        self.n = 0
        rospy.Subscriber("/joint_states", JointState, self.on_state, queue_size=1)

    def on_state(self, msg):
        self.n += 1
        if self.n % self.EVERY:
            return
        f = arm.frames(np.array(msg.position))[-1]
        t = TransformStamped()
        t.header.stamp, t.header.frame_id, t.child_frame_id = msg.header.stamp, "base", "tool"
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = f[:3, 3]
        r = f[:3, :3]   # rotation matrix to quaternion (w first, then x, y, z)
        w = np.sqrt(max(0.0, 1.0 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
        w = max(w, 1e-9)
        t.transform.rotation.w = w
        t.transform.rotation.x = (r[2, 1] - r[1, 2]) / (4 * w)
        t.transform.rotation.y = (r[0, 2] - r[2, 0]) / (4 * w)
        t.transform.rotation.z = (r[1, 0] - r[0, 1]) / (4 * w)
        self.br.sendTransform(t)


NODES = {"sim": ArmSim, "planner": Planner, "controller": Controller, "state_publisher": StatePublisher}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in NODES:
        print(f"usage: nodes.py {'|'.join(NODES)}", file=sys.stderr)
        sys.exit(2)
    rospy.init_node(f"arm_{sys.argv[1]}")
    node = NODES[sys.argv[1]]()
    rospy.spin()
