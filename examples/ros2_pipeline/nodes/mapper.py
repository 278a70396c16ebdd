#!/usr/bin/env python3
"""Process "mapper": node /mapper serves /plan_path (test_msgs/srv/BasicTypes): a plan for
the fused scan the request names. The service callback is a module-level function."""
import time

from common import GroundTruth, Ids, Slow, busy, init, spin
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from test_msgs.srv import BasicTypes

GT = IDS = SLOW = RUNS = KEY = None


def plan_path(request: BasicTypes.Request, response: BasicTypes.Response) -> BasicTypes.Response:
    t0 = time.monotonic_ns()
    busy(800)
    i = IDS.next("/plan_path:response")
    GT.add(ev="serve", node="/mapper", service="/plan_path", id=request.uint64_value, response_id=i)
    response.uint64_value = i
    response.int64_value = request.uint64_value
    SLOW("mapper.plan_path")
    t1 = time.monotonic_ns()
    RUNS((KEY, t0, t1))
    return response


def main() -> None:
    global GT, IDS, SLOW, RUNS, KEY
    init()
    GT, IDS, SLOW = GroundTruth("mapper"), Ids(), Slow()
    RUNS, KEY = GT.runs, GT.run_key("/mapper", "mapper.plan_path", "service", "/plan_path")
    node = Node("mapper")
    node.create_service(BasicTypes, "/plan_path", plan_path)
    print("ready", flush=True)
    spin(SingleThreadedExecutor(), GT, [node])


if __name__ == "__main__":
    main()
