// Process "planner": a class whose callbacks publish through its own members.
//   [planner/fused]  sub /hs/fused   -> nothing; caches the fused message's id in fused_
//   [planner/status] sub /hs/status  -> /hs/echo through echo_.send (a member object holding the publisher)
//   [planner/timer]  timer 100 ms    -> /hs/plan through plan(), a member function that publishes
//                                       through out_, a pointer member to plan_pub_
//   true dependency: fused -> timer (fused_)
#include "helpers.h"

class Planner {
 public:
  explicit Planner(ros::NodeHandle& nh) : out_(&plan_pub_) {
    plan_pub_ = nh.advertise<truth::Msg>("/hs/plan", 100);
    echo_.pub = nh.advertise<truth::Msg>("/hs/echo", 100);
    sub_fused_ = nh.subscribe("/hs/fused", 100, &Planner::onFused, this);  // [planner/fused]
    sub_status_ = nh.subscribe("/hs/status", 100, &Planner::onStatus, this);  // [planner/status]
    timer_ = nh.createTimer(ros::Duration(0.1), &Planner::onTimer, this);  // [planner/timer]
  }

  void onFused(const truth::Msg::ConstPtr& in) { fused_ = in->data[0]; }

  void onStatus(const truth::Msg::ConstPtr& in) {
    echo_.send(truth::make_msg(truth::make_id(5, ++echo_seq_), {in->data[0]}));
  }

  void onTimer(const ros::TimerEvent&) {
    if (fused_) plan();
  }

 private:
  void plan() {
    truth::work_us(400);
    hs::publish(*out_, truth::make_msg(truth::make_id(6, ++plan_seq_), {fused_}));
  }

  ros::Publisher plan_pub_;
  ros::Publisher* out_;
  hs::Channel echo_;
  ros::Subscriber sub_fused_, sub_status_;
  ros::Timer timer_;
  uint64_t fused_ = 0, echo_seq_ = 0, plan_seq_ = 0;
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
