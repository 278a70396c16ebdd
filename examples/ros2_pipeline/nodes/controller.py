#!/usr/bin/env python3
"""Process "controller": node /controller serves the action /follow
(test_msgs/action/NestedMessage) on a multi-threaded executor (3 threads, a reentrant
callback group): each accepted goal is executed in STEPS steps, each publishing a command on
/cmd and a feedback message, then the goal succeeds with a result."""
import time
from time import monotonic_ns

from common import GroundTruth, Ids, Slow, busy, init, spin
from rclpy.action import ActionServer, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import UInt64MultiArray
from test_msgs.action import NestedMessage

STEPS = 3


class Controller(Node):
    def __init__(self, gt: GroundTruth, ids: Ids, slow: Slow):
        super().__init__("controller")
        self.gt, self.ids, self.slow, self.begin = gt, ids, slow, gt.begin
        self.k_goal = gt.run_key("/controller", "controller.on_goal", "service", "/follow/_action/send_goal")
        self.k_execute = gt.run_key("/controller", "controller.execute", "service", "/follow/_action/send_goal")
        self.pub = self.create_publisher(UInt64MultiArray, "/cmd", 10)
        self.server = ActionServer(self, NestedMessage, "/follow", self.execute, goal_callback=self.on_goal,
                                   callback_group=ReentrantCallbackGroup())

    def on_goal(self, goal) -> GoalResponse:
        t0 = monotonic_ns()
        run = self.begin(self.k_goal, t0)
        self.gt.add(ev="goal_recv", node="/controller", action="/follow", id=goal.nested_field.uint64_value)
        accept = GoalResponse.ACCEPT
        run[2] = monotonic_ns()
        return accept

    def execute(self, goal_handle):
        t0 = monotonic_ns()
        run = self.begin(self.k_execute, t0)
        goal = goal_handle.request.nested_field.uint64_value
        self.gt.add(ev="execute", node="/controller", action="/follow", id=goal)
        for _ in range(STEPS):
            busy(500)
            i = self.ids.next("/cmd")
            self.gt.add(ev="pub", node="/controller", topic="/cmd", id=i, inputs=[goal])
            self.pub.publish(UInt64MultiArray(data=[i, goal]))
            fb = NestedMessage.Feedback()
            fb.nested_field.uint64_value = self.ids.next("/follow:feedback")
            self.gt.add(ev="feedback", node="/controller", action="/follow", id=fb.nested_field.uint64_value, inputs=[goal])
            goal_handle.publish_feedback(fb)
            time.sleep(0.002)
        self.slow("controller.execute")
        goal_handle.succeed()
        result = NestedMessage.Result()
        result.nested_field.uint64_value = self.ids.next("/follow:result")
        self.gt.add(ev="result", node="/controller", action="/follow", id=result.nested_field.uint64_value, inputs=[goal])
        run[2] = monotonic_ns()
        return result


def main() -> None:
    init()
    gt = GroundTruth("controller")
    node = Controller(gt, Ids(), Slow())
    print("ready", flush=True)
    spin(MultiThreadedExecutor(num_threads=3), gt, [node])


if __name__ == "__main__":
    main()
