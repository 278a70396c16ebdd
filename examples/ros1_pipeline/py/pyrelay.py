#!/usr/bin/env python3
"""rospy node /pyrelay: /camera (from roscpp) -> /camera_py (queued publisher), and a 5 Hz
timer publishing /py_tick (unqueued publisher). Messages as in the C++ nodes."""
import rospy
from gt import GroundTruth
from std_msgs.msg import UInt64MultiArray

CODE_RELAY, CODE_TICK = 30, 31


def main():
    rospy.init_node("pyrelay")
    gt = GroundTruth("pyrelay")
    node = rospy.get_name()
    seq = {"relay": 0, "tick": 0}
    pub = rospy.Publisher("/camera_py", UInt64MultiArray, queue_size=10)
    tick = rospy.Publisher("/py_tick", UInt64MultiArray)

    def on_camera(msg):
        gt.line(ev="recv", node=node, topic="/camera", id=msg.data[0])
        seq["relay"] += 1
        out = UInt64MultiArray(data=[(CODE_RELAY << 32) | seq["relay"], msg.data[0]])
        gt.line(ev="pub", node=node, topic="/camera_py", id=out.data[0], inputs=[msg.data[0]])
        pub.publish(out)

    def on_tick(_event):
        gt.line(ev="timer", node=node, period_s=0.2)
        seq["tick"] += 1
        out = UInt64MultiArray(data=[(CODE_TICK << 32) | seq["tick"]])
        gt.line(ev="pub", node=node, topic="/py_tick", id=out.data[0], inputs=[])
        tick.publish(out)

    rospy.Subscriber("/camera", UInt64MultiArray, on_camera, queue_size=100)
    rospy.Timer(rospy.Duration(0.2), on_tick)
    rospy.spin()
    gt.close()


if __name__ == "__main__":
    main()
