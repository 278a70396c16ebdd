// Process "perception": three nodes in one process (nodelet-style), so that
// /lidar_filtered (filter -> fusion) and /tf_like (localizer -> itself) are
// delivered intra-process.
//   filter:    /lidar -> /lidar_filtered, one output per input (direct link),
//              published as a shared_ptr (roscpp's no-copy intra-process path).
//   fusion:    partial synchronous: publishes /fused once both /lidar_filtered
//              and /imu have a new message.
//   localizer: timer publishes /tf_like (by value: serialized intra-process
//              path) and subscribes /tf_like as well.
#include "common.h"

#include <roscope/annotate.h>

using namespace pipeline;

class Filter {
 public:
  explicit Filter(GroundTruth& gt) : gt_(gt), nh_("/perception/filter"), ids_(10) {
    pub_ = nh_.advertise<Msg>("/lidar_filtered", 100);
    sub_ = nh_.subscribe("/lidar", 100, &Filter::onLidar, this);
  }
  void onLidar(const Msg::ConstPtr& in) {
    slow(gt_, "filter.onLidar");
    gt_.recv(nh_.getNamespace(), "/lidar", *in);
    slowDown();
    slow_once();
    boost::shared_ptr<Msg> out = boost::make_shared<Msg>(make_msg(ids_.next(), {in->data[0]}, 1024));
    gt_.pub(nh_.getNamespace(), pub_, *out);
    pub_.publish(out);
  }

  // ROS1_PIPELINE_SLOW_FILTER=MS@SECONDS: the first run SECONDS after the node started sleeps
  // MS more, once (logged as {"ev":"slow",...}): a known slow run for the flight recorder's test.
  void slow_once() {
    if (slowed_) return;
    const char* v = getenv("ROS1_PIPELINE_SLOW_FILTER");
    double ms = 0, at = 0;
    if (!v || sscanf(v, "%lf@%lf", &ms, &at) != 2 || (ros::WallTime::now() - started_).toSec() < at) return;
    slowed_ = true;
    gt_.line("{\"ev\":\"slow\",\"node\":\"%s\",\"ms\":%g,\"mono_ns\":%" PRId64 "}", nh_.getNamespace().c_str(), ms,
             mono_ns());
    ros::WallDuration(ms / 1000.0).sleep();
  }

 private:
  // ROS1_PIPELINE_SLOW=MS@FROM-TO: each run that starts FROM to TO seconds after the
  // node started sleeps MS ms before it publishes (logged as "slow" in the ground truth).
  void slowDown() {
    const char* v = getenv("ROS1_PIPELINE_SLOW");
    int ms = 0;
    double from = 0, to = 0;
    if (!v || sscanf(v, "%d@%lf-%lf", &ms, &from, &to) != 3 || ms <= 0) return;
    int64_t now = mono_ns();
    double t = (now - start_ns_) / 1e9;
    if (t < from || t >= to) return;
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&d, nullptr);
    gt_.slow(nh_.getNamespace(), ms, now, mono_ns());
  }
  GroundTruth& gt_;
  ros::NodeHandle nh_;
  ros::Publisher pub_;
  ros::Subscriber sub_;
  IdSource ids_;
  int64_t start_ns_ = mono_ns();
  ros::WallTime started_ = ros::WallTime::now();
  bool slowed_ = false;
};

class Fusion {
 public:
  explicit Fusion(GroundTruth& gt) : gt_(gt), nh_("/perception/fusion"), ids_(11) {
    pub_ = nh_.advertise<Msg>("/fused", 100);
    sub_lidar_ = nh_.subscribe("/lidar_filtered", 100, &Fusion::onLidar, this);
    sub_imu_ = nh_.subscribe("/imu", 100, &Fusion::onImu, this);
    roscope::message_link_partial_sync({&sub_lidar_, &sub_imu_}, {&pub_});
  }
  void onLidar(const Msg::ConstPtr& in) {
    slow(gt_, "fusion.onLidar");
    gt_.recv(nh_.getNamespace(), "/lidar_filtered", *in);
    lidar_ = in;
    maybePublish();
  }
  void onImu(const Msg::ConstPtr& in) {
    slow(gt_, "fusion.onImu");
    gt_.recv(nh_.getNamespace(), "/imu", *in);
    imu_ = in;
    maybePublish();
  }

 private:
  void maybePublish() {
    if (!lidar_ || !imu_) return;
    Msg out = make_msg(ids_.next(), {lidar_->data[0], imu_->data[0]}, 0);
    lidar_.reset();
    imu_.reset();
    gt_.pub(nh_.getNamespace(), pub_, out);
    pub_.publish(out);
  }
  GroundTruth& gt_;
  ros::NodeHandle nh_;
  ros::Publisher pub_;
  ros::Subscriber sub_lidar_, sub_imu_;
  Msg::ConstPtr lidar_, imu_;
  IdSource ids_;
};

class Localizer {
 public:
  explicit Localizer(GroundTruth& gt) : gt_(gt), nh_("/perception/localizer"), ids_(12) {
    pub_ = nh_.advertise<Msg>("/tf_like", 100);
    sub_ = nh_.subscribe("/tf_like", 100, &Localizer::onTf, this);
    timer_ = nh_.createTimer(ros::Duration(1.0 / param_rate("PIPELINE_TF_HZ", 25)), &Localizer::onTimer, this);
  }
  void onTimer(const ros::TimerEvent& e) {
    slow(gt_, "localizer.onTimer");
    gt_.timer(nh_.getNamespace(), (e.current_expected - e.last_expected).toSec());
    Msg m = make_msg(ids_.next(), {}, 0);
    gt_.pub(nh_.getNamespace(), pub_, m);
    pub_.publish(m);
  }
  void onTf(const Msg::ConstPtr& in) {
    slow(gt_, "localizer.onTf");
    gt_.recv(nh_.getNamespace(), "/tf_like", *in);
  }

 private:
  GroundTruth& gt_;
  ros::NodeHandle nh_;
  ros::Publisher pub_;
  ros::Subscriber sub_;
  ros::Timer timer_;
  IdSource ids_;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "perception");
  GroundTruth gt("perception");
  Filter filter(gt);
  Fusion fusion(gt);
  Localizer localizer(gt);
  ros::spin();
  gt.close();
  return 0;
}
