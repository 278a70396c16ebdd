"""The C++ example (examples/ros2_cpp_pipeline, real rclcpp) as its tests know it from its sources."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ros2_cpp_pipeline"


#: The example's callbacks with runs: rclcpp traces a timer's, a subscription's (intra-process
#: ones too) and a service's (callback_start/end); roscope's tracer library gives the others
#: theirs (OURS). (node, cb of the ground truth) -> (kind, topic or service, or the timer's
#: period in ns).
TRACED = {
    ("/camera", "camera.tick"): ("timer", 50_000_000),
    ("/lidar", "lidar.tick"): ("timer", 100_000_000),
    ("/detector", "detector.on_image"): ("subscription", "/image"),
    ("/detector", "detector.on_scan"): ("subscription", "/scan"),
    ("/detector", "detector.health"): ("timer", 200_000_000),
    ("/planner", "planner.on_detections"): ("subscription", "/detections"),
    ("/planner", "planner.on_scan"): ("subscription", "/scan"),
    ("/mapper", "mapper.plan"): ("service", "/plan"),
    ("/planner", "planner.on_plan"): ("client", "/plan"),
    ("/planner", "planner.on_goal_response"): ("client", "/follow/_action/send_goal"),
    ("/planner", "planner.on_result"): ("client", "/follow/_action/get_result"),
    ("/planner", "planner.on_feedback"): ("subscription", "/follow/_action/feedback"),
    ("/controller", "controller.on_goal"): ("service", "/follow/_action/send_goal"),
    ("/mapper", "mapper.tick"): ("timer", 500_000_000),
    ("/controller", "controller.on_path"): ("subscription", "/path"),
    ("/controller", "controller.step"): ("timer", 50_000_000),
}
#: Runs rclcpp 28 gives no tracepoint, made by roscope's tracer library
#: (instrument/ros2/src/rmw_services.c): a client's response callback (Client::handle_response
#: in Executor::execute_client) and rclcpp_action's (its Waitable::execute after a request or
#: response taken: the server's goal handling, the client's goal response and result; or a
#: feedback message taken: the client's feedback). Each is rclcpp's handling of the request,
#: response or message around the user's callback.
OURS = {"planner.on_plan", "planner.on_goal_response", "planner.on_result", "planner.on_feedback", "controller.on_goal"}
