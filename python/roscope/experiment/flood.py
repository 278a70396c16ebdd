"""A ROS 1 flood publisher (rospy, std_msgs/String of PAYLOAD bytes at RATE Hz on TOPIC),
started by `roscope experiment` for msg_load scenarios; with --sink it also subscribes to
its topic, so that the messages really cross a TCPROS connection (a ROS 1 publisher
without subscribers sends nothing). On exit it prints what it sent as JSON.

    python -m roscope.experiment.flood --topic T --rate HZ --payload BYTES [--sink]
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="roscope-flood")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--payload", type=int, default=1024)
    ap.add_argument("--sink", action="store_true")
    a = ap.parse_args(argv)
    import rospy
    from std_msgs.msg import String

    name = "roscope_flood_" + a.topic.strip("/").replace("/", "_")
    rospy.init_node(name, anonymous=True, disable_signals=True)
    received = [0]
    if a.sink:
        rospy.Subscriber(a.topic, String, lambda _m: received.__setitem__(0, received[0] + 1), queue_size=10)
    pub = rospy.Publisher(a.topic, String, queue_size=10)
    msg = String(data="X" * a.payload)
    period = 1.0 / a.rate
    sent = 0
    t0 = time.monotonic()
    nxt = t0
    try:
        while True:
            pub.publish(msg)
            sent += 1
            nxt += period
            d = nxt - time.monotonic()
            if d > 0:
                time.sleep(d)
            elif d < -1.0:          # far behind: do not burst to catch up
                nxt = time.monotonic()
    except (KeyboardInterrupt, rospy.ROSException):
        pass
    finally:
        el = time.monotonic() - t0
        print(json.dumps({"topic": a.topic, "sent": sent, "received": received[0], "seconds": round(el, 3),
                          "rate_achieved": round(sent / el, 1) if el > 0 else None}), flush=True)
        rospy.signal_shutdown("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
