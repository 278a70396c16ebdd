#!/usr/bin/env python3
"""Process "lidar-imu-drv" (renamed): the sensor drivers /sensors/lidar (20 Hz timer -> /lidar)
and /sensors/imu (50 Hz timer -> /imu), two nodes on one single-threaded executor. Timer
callbacks are lambdas."""
from time import monotonic_ns

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
        self.begin, self.key = gt.begin, gt.run_key(self.node, self.cb, "timer", topic)
        self.pub = self.create_publisher(UInt64MultiArray, topic, 10)
        # The callback is the lambda: the ground truth's first clock read is its first
        # operation (then it calls the method), not the method's.
        self.timer = self.create_timer(period, lambda: self.tick(t0) if (t0 := monotonic_ns()) else None)

    def tick(self, t0: int) -> None:
        run = self.begin(self.key, t0)
        i = self.ids.next(self.topic)
        self.gt.add(ev="pub", node=self.node, topic=self.topic, id=i, inputs=[])
        self.pub.publish(UInt64MultiArray(data=[i]))
        self.slow(self.cb)
        run[2] = monotonic_ns()


def main() -> None:
    init()
    gt, ids, slow = GroundTruth("sensors"), Ids(), Slow()
    nodes = [SensorNode("lidar", "/lidar", 0.05, gt, ids, slow), SensorNode("imu", "/imu", 0.02, gt, ids, slow)]
    print("ready", flush=True)
    spin(SingleThreadedExecutor(), gt, nodes)


if __name__ == "__main__":
    main()
