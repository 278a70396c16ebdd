#!/usr/bin/env python3
"""Process "mapper": node /mapper serves /plan_path (test_msgs/srv/BasicTypes): a plan for
the fused scan the request names. The service callback is a module-level function."""
from time import monotonic_ns

from common import GroundTruth, Ids, Slow, busy, init, spin
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from test_msgs.srv import BasicTypes

GT = IDS = SLOW = BEGIN = KEY = None


def plan_path(request: BasicTypes.Request, response: BasicTypes.Response) -> BasicTypes.Response:
    t0 = monotonic_ns()
    run = BEGIN(KEY, t0)
    busy(800)
    i = IDS.next("/plan_path:response")
    GT.add(ev="serve", node="/mapper", service="/plan_path", id=request.uint64_value, response_id=i)
    response.uint64_value = i
    response.int64_value = request.uint64_value
    SLOW("mapper.plan_path")
    run[2] = monotonic_ns()
    return response


def main() -> None:
    global GT, IDS, SLOW, BEGIN, KEY
    init()
    GT, IDS, SLOW = GroundTruth("mapper"), Ids(), Slow()
    BEGIN, KEY = GT.begin, GT.run_key("/mapper", "mapper.plan_path", "service", "/plan_path")
    node = Node("mapper")
    node.create_service(BasicTypes, "/plan_path", plan_path)
    print("ready", flush=True)
    spin(SingleThreadedExecutor(), GT, [node])


if __name__ == "__main__":
    main()
