// Process "planner": a periodic asynchronous planner and, in the same node, a
// control-like subscription that does not read the planner's state.
//   onPose, onObjects: cache the latest /localization/pose and
//     /perception/objects ids;
//   onTimer (10 Hz): publishes /planning/trajectory from the cache;
//   onTrajectory: receives /planning/trajectory (intra-process, from this very
//     node) and publishes /control/command from that message alone.
//   true dependencies: onPose -> onTimer, onObjects -> onTimer. None into
//   onTrajectory: an "every pair of callbacks" rule gives it onPose and
//   onObjects as inputs (phantom paths that skip the timer).
#include "truth.h"

class Planner {
 public:
  explicit Planner(ros::NodeHandle& nh) {
    traj_pub_ = nh.advertise<truth::Msg>("/planning/trajectory", 100);
    cmd_pub_ = nh.advertise<truth::Msg>("/control/command", 100);
    pose_sub_ = nh.subscribe("/localization/pose", 100, &Planner::onPose, this);
    objects_sub_ = nh.subscribe("/perception/objects", 100, &Planner::onObjects, this);
    traj_sub_ = nh.subscribe("/planning/trajectory", 100, &Planner::onTrajectory, this);
    timer_ = nh.createTimer(ros::Duration(1.0 / truth::env_rate("UNANNOTATED_PLANNER_HZ", 10)), &Planner::onTimer,
                            this);
  }

  void onPose(const truth::Msg::ConstPtr& in) { pose_id_ = in->data[0]; }

  void onObjects(const truth::Msg::ConstPtr& in) { objects_id_ = in->data[0]; }

  void onTimer(const ros::TimerEvent&) {
    truth::work_us(1000);
    truth::Msg out = truth::make_msg(truth::make_id(40, ++traj_seq_), {pose_id_, objects_id_});
    truth::log_pub(traj_pub_, out);
    traj_pub_.publish(out);
  }

  void onTrajectory(const truth::Msg::ConstPtr& in) {
    truth::work_us(200);
    truth::Msg out = truth::make_msg(truth::make_id(41, ++cmd_seq_), {in->data[0]});
    truth::log_pub(cmd_pub_, out);
    cmd_pub_.publish(out);
  }

 private:
  ros::Publisher traj_pub_, cmd_pub_;
  ros::Subscriber pose_sub_, objects_sub_, traj_sub_;
  ros::Timer timer_;
  uint64_t pose_id_ = 0, objects_id_ = 0;
  uint64_t traj_seq_ = 0, cmd_seq_ = 0;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "planner");
  truth::open_log("planner");
  ros::NodeHandle nh;
  Planner planner(nh);
  ros::spin();
  truth::close_log();
  return 0;
}
