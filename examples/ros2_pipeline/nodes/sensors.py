#!/usr/bin/env python3
"""Process "lidar-imu-drv" (renamed): the sensor drivers /sensors/lidar (20 Hz timer -> /lidar)
and /sensors/imu (50 Hz timer -> /imu), two nodes on one single-threaded executor. Timer
callbacks are lambdas."""
import time

from common import GroundTruth, Ids, Slow, init, rename_process, spin

rename_process("lidar-imu-drv")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_msgs.msg import UInt64MultiArray  # noqa: E402


class SensorNode(Node):
    def __init__(self, name: str, topic: str, period: float, gt: GroundTruth, ids: Ids, slow: Slow):
        super().__init__(name, namespace="/sensors")
        self.gt, self.ids, self.slow, self.topic = gt, ids, slow, topic
        self.cb = f"{name}.tick"
        self.node = self.get_fully_qualified_name()
        self.runs, self.key = gt.runs, gt.run_key(self.node, self.cb, "timer", topic)
        self.pub = self.create_publisher(UInt64MultiArray, topic, 10)
        self.timer = self.create_timer(period, lambda: self.tick())

    def tick(self) -> None:
        t0 = time.monotonic_ns()
        i = self.ids.next(self.topic)
        self.gt.add(ev="pub", node=self.node, topic=self.topic, id=i, inputs=[])
        self.pub.publish(UInt64MultiArray(data=[i]))
        self.slow(self.cb)
        t1 = time.monotonic_ns()
        self.runs((self.key, t0, t1))


def main() -> None:
    init()
    gt, ids, slow = GroundTruth("sensors"), Ids(), Slow()
    nodes = [SensorNode("lidar", "/lidar", 0.05, gt, ids, slow), SensorNode("imu", "/imu", 0.02, gt, ids, slow)]
    print("ready", flush=True)
    spin(SingleThreadedExecutor(), gt, nodes)


if __name__ == "__main__":
    main()
