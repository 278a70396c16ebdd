#!/usr/bin/env python3
"""rospy node /pylistener: subscribes /camera_py and /py_tick (rospy -> rospy)."""
import rospy
from gt import GroundTruth
from std_msgs.msg import UInt64MultiArray


def main():
    rospy.init_node("pylistener")
    gt = GroundTruth("pylistener")
    node = rospy.get_name()

    def make(topic):
        def on_msg(msg):
            gt.line(ev="recv", node=node, topic=topic, id=msg.data[0])
        on_msg.__qualname__ = "on_" + topic.strip("/")
        return on_msg

    rospy.Subscriber("/camera_py", UInt64MultiArray, make("/camera_py"), queue_size=100)
    rospy.Subscriber("/py_tick", UInt64MultiArray, make("/py_tick"), queue_size=100)
    rospy.spin()
    gt.close()


if __name__ == "__main__":
    main()
