// Process "planner": periodic asynchronous node with a multi-threaded spinner.
// Subscriptions cache the latest /fused and /camera messages; a 10 Hz timer
// publishes /plan from whatever is cached. Also a /tf_like subscriber and the
// service /planner/get_status (std_srvs/Trigger).
#include "common.h"

#include <roscope/annotate.h>
#include <std_srvs/Trigger.h>

using namespace pipeline;

class Planner {
 public:
  explicit Planner(GroundTruth& gt) : gt_(gt), nh_("/planner"), ids_(20) {
    pub_ = nh_.advertise<Msg>("/plan", 100);
    sub_fused_ = nh_.subscribe("/fused", 100, &Planner::onFused, this);
    sub_camera_ = nh_.subscribe("/camera", 100, &Planner::onCamera, this);
    sub_tf_ = nh_.subscribe("/tf_like", 100, &Planner::onTf, this);
    srv_ = nh_.advertiseService("/planner/get_status", &Planner::onStatus, this);
    timer_ = nh_.createTimer(ros::Duration(1.0 / param_rate("PIPELINE_PLAN_HZ", 10)), &Planner::onTimer, this);
    roscope::message_link_periodic_async({&sub_fused_, &sub_camera_}, {&pub_});
  }
  void onFused(const Msg::ConstPtr& in) {
    slow(gt_, "planner.onFused");
    gt_.recv(nh_.getNamespace(), "/fused", *in);
    std::lock_guard<std::mutex> g(mu_);
    fused_ = in->data[0];
  }
  void onCamera(const Msg::ConstPtr& in) {
    slow(gt_, "planner.onCamera");
    gt_.recv(nh_.getNamespace(), "/camera", *in);
    std::lock_guard<std::mutex> g(mu_);
    camera_ = in->data[0];
  }
  void onTf(const Msg::ConstPtr& in) {
    slow(gt_, "planner.onTf");
    gt_.recv(nh_.getNamespace(), "/tf_like", *in);
  }
  void onTimer(const ros::TimerEvent&) {
    slow(gt_, "planner.onTimer");
    gt_.timer(nh_.getNamespace(), 0.1);
    std::vector<uint64_t> inputs;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (fused_) inputs.push_back(fused_);
      if (camera_) inputs.push_back(camera_);
    }
    Msg m = make_msg(ids_.next(), inputs, 0);
    gt_.pub(nh_.getNamespace(), pub_, m);
    pub_.publish(m);
  }
  bool onStatus(std_srvs::Trigger::Request&, std_srvs::Trigger::Response& res) {
    slow(gt_, "planner.onStatus");
    gt_.service(nh_.getNamespace(), "/planner/get_status", "srv", true);
    res.success = true;
    res.message = "ok";
    return true;
  }

 private:
  GroundTruth& gt_;
  ros::NodeHandle nh_;
  ros::Publisher pub_;
  ros::Subscriber sub_fused_, sub_camera_, sub_tf_;
  ros::ServiceServer srv_;
  ros::Timer timer_;
  std::mutex mu_;
  uint64_t fused_ = 0, camera_ = 0;
  IdSource ids_;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "planner");
  GroundTruth gt("planner");
  Planner planner(gt);
  ros::MultiThreadedSpinner spinner(2);
  spinner.spin();
  gt.close();
  return 0;
}
