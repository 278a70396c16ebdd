#!/usr/bin/env python3
"""Process "fusion": node /fusion fuses each /lidar scan with the newest /imu sample (cached by
the /imu callback) into /fused; it also listens to the controller's /cmd. A base class holds
the cache, a subclass the fusion (bound methods of both as callbacks)."""
from time import monotonic_ns

from common import GroundTruth, Ids, Slow, busy, init, spin
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import UInt64MultiArray


class FusionBase(Node):
    """Caches the newest /imu sample."""

    def __init__(self, gt: GroundTruth, slow: Slow):
        super().__init__("fusion")
        self.gt, self.slow, self.imu, self.begin = gt, slow, None, gt.begin
        self.k_imu = gt.run_key("/fusion", "fusion.on_imu", "subscription", "/imu")
        self.k_lidar = gt.run_key("/fusion", "fusion.on_lidar", "subscription", "/lidar")
        self.k_cmd = gt.run_key("/fusion", "fusion.on_cmd", "subscription", "/cmd")
        self.create_subscription(UInt64MultiArray, "/imu", self.on_imu, 10)

    def on_imu(self, msg: UInt64MultiArray) -> None:
        t0 = monotonic_ns()
        run = self.begin(self.k_imu, t0)
        self.gt.add(ev="recv", node="/fusion", topic="/imu", id=msg.data[0])
        self.imu = msg.data[0]
        self.slow("fusion.on_imu")
        run[2] = monotonic_ns()


class Fusion(FusionBase):
    def __init__(self, gt: GroundTruth, ids: Ids, slow: Slow):
        super().__init__(gt, slow)
        self.ids = ids
        self.pub = self.create_publisher(UInt64MultiArray, "/fused", 10)
        self.create_subscription(UInt64MultiArray, "/lidar", self.on_lidar, 10)
        self.create_subscription(UInt64MultiArray, "/cmd", self.on_cmd, 10)

    def on_lidar(self, msg: UInt64MultiArray) -> None:
        t0 = monotonic_ns()
        run = self.begin(self.k_lidar, t0)
        self.gt.add(ev="recv", node="/fusion", topic="/lidar", id=msg.data[0])
        inputs = [msg.data[0]] + ([self.imu] if self.imu is not None else [])
        busy(300)
        i = self.ids.next("/fused")
        self.gt.add(ev="pub", node="/fusion", topic="/fused", id=i, inputs=inputs)
        self.pub.publish(UInt64MultiArray(data=[i, *inputs]))
        self.slow("fusion.on_lidar")
        run[2] = monotonic_ns()

    def on_cmd(self, msg: UInt64MultiArray) -> None:
        t0 = monotonic_ns()
        run = self.begin(self.k_cmd, t0)
        self.gt.add(ev="recv", node="/fusion", topic="/cmd", id=msg.data[0])
        self.slow("fusion.on_cmd")
        run[2] = monotonic_ns()


def main() -> None:
    init()
    gt = GroundTruth("fusion")
    node = Fusion(gt, Ids(), Slow())
    print("ready", flush=True)
    spin(SingleThreadedExecutor(), gt, [node])


if __name__ == "__main__":
    main()
