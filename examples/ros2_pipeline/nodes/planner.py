#!/usr/bin/env python3
"""Process "planner": node /planner asks /mapper for a plan for each /fused scan (service
/plan_path, asynchronous: the response arrives in a done callback), publishes each plan on
/plan, and every 4th plan sends it as a goal to the controller's action /follow
(test_msgs/action/NestedMessage), with feedback and result callbacks."""
from time import monotonic_ns

from common import GroundTruth, Ids, Slow, init, spin
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import UInt64MultiArray
from test_msgs.action import NestedMessage
from test_msgs.srv import BasicTypes

GOAL_EVERY = 4


class Planner(Node):
    def __init__(self, gt: GroundTruth, ids: Ids, slow: Slow):
        super().__init__("planner")
        self.gt, self.ids, self.slow, self.begin = gt, ids, slow, gt.begin
        self.k_fused = gt.run_key("/planner", "planner.on_fused", "subscription", "/fused")
        self.k_plan = gt.run_key("/planner", "planner.on_plan", "client", "/plan_path")
        self.k_goal = gt.run_key("/planner", "planner.on_goal_response", "client", "/follow/_action/send_goal")
        self.k_feedback = gt.run_key("/planner", "planner.on_feedback", "subscription", "/follow/_action/feedback")
        self.k_result = gt.run_key("/planner", "planner.on_result", "client", "/follow/_action/get_result")
        self.plans = 0
        self.client = self.create_client(BasicTypes, "/plan_path")
        self.action = ActionClient(self, NestedMessage, "/follow")
        self.pub = self.create_publisher(UInt64MultiArray, "/plan", 10)
        self.create_subscription(UInt64MultiArray, "/fused", lambda msg: self.on_fused(msg, t0) if (t0 := monotonic_ns()) else None, 10)

    def on_fused(self, msg: UInt64MultiArray, t0: int) -> None:
        run = self.begin(self.k_fused, t0)
        self.gt.add(ev="recv", node="/planner", topic="/fused", id=msg.data[0])
        if self.client.service_is_ready():
            req = BasicTypes.Request(uint64_value=self.ids.next("/plan_path:request"))
            self.gt.add(ev="request", node="/planner", service="/plan_path", id=req.uint64_value, inputs=[msg.data[0]])
            self.client.call_async(req).add_done_callback(self.on_plan)
        self.slow("planner.on_fused")
        run[2] = monotonic_ns()

    def on_plan(self, future) -> None:
        t0 = monotonic_ns()
        run = self.begin(self.k_plan, t0)
        resp = future.result()
        self.gt.add(ev="response", node="/planner", service="/plan_path", id=resp.uint64_value, request_id=resp.int64_value)
        i = self.ids.next("/plan")
        self.gt.add(ev="pub", node="/planner", topic="/plan", id=i, inputs=[resp.uint64_value])
        self.pub.publish(UInt64MultiArray(data=[i, resp.uint64_value]))
        self.plans += 1
        if self.plans % GOAL_EVERY == 0 and self.action.server_is_ready():
            goal = NestedMessage.Goal()
            goal.nested_field.uint64_value = self.ids.next("/follow:goal")
            goal.nested_field.int64_value = i
            self.gt.add(ev="goal", node="/planner", action="/follow", id=goal.nested_field.uint64_value, inputs=[i])
            self.action.send_goal_async(goal, feedback_callback=self.on_feedback).add_done_callback(self.on_goal_response)
        self.slow("planner.on_plan")
        run[2] = monotonic_ns()

    def on_goal_response(self, future) -> None:
        t0 = monotonic_ns()
        run = self.begin(self.k_goal, t0)
        handle = future.result()
        self.gt.add(ev="goal_accepted", node="/planner", action="/follow", accepted=bool(handle.accepted))
        if handle.accepted:
            handle.get_result_async().add_done_callback(self.on_result)
        run[2] = monotonic_ns()

    def on_feedback(self, feedback) -> None:
        t0 = monotonic_ns()
        run = self.begin(self.k_feedback, t0)
        self.gt.add(ev="feedback_recv", node="/planner", action="/follow", id=feedback.feedback.nested_field.uint64_value)
        run[2] = monotonic_ns()

    def on_result(self, future) -> None:
        t0 = monotonic_ns()
        run = self.begin(self.k_result, t0)
        result = future.result().result
        self.gt.add(ev="result_recv", node="/planner", action="/follow", id=result.nested_field.uint64_value)
        run[2] = monotonic_ns()


def main() -> None:
    init()
    gt = GroundTruth("planner")
    node = Planner(gt, Ids(), Slow())
    print("ready", flush=True)
    spin(SingleThreadedExecutor(), gt, [node])


if __name__ == "__main__":
    main()
