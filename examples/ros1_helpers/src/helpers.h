// The publication helpers every callback of examples/ros1_helpers publishes through
// (issue 39 item 8): no callback calls ros::Publisher::publish itself.
//   hs::publish(ros::Publisher&, const M&)       a free function template, the publisher by reference
//   hs::send(ros::Publisher*, id, inputs)         by pointer, one call deep (calls hs::publish)
//   hs::stamp_and_send(ros::Publisher&, ...)      two calls deep (calls hs::send)
//   hs::Channel::send(const Msg&)                 a member function of an object that holds a publisher
//   hs::Stamper::send(inputs)                     a member function publishing through a pointer member
//                                                 the object was constructed with (Stamper s(&pub, code))
// Each logs the publication to the ground truth right before it publishes (truth.h).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "truth.h"

namespace hs {

template <typename M>
void publish(ros::Publisher& pub, const M& m) {
  truth::log_pub(pub, m);
  pub.publish(m);
}

inline void send(ros::Publisher* pub, uint64_t id, std::initializer_list<uint64_t> inputs) {
  publish(*pub, truth::make_msg(id, inputs));
}

// `seq` is the caller's own counter (each caller passes its own).
inline void stamp_and_send(ros::Publisher& pub, uint32_t code, uint64_t& seq, std::initializer_list<uint64_t> inputs) {
  send(&pub, truth::make_id(code, ++seq), inputs);
}

struct Channel {
  ros::Publisher pub;
  uint64_t sent = 0;
  void send(const truth::Msg& m) {
    ++sent;
    publish(pub, m);
  }
};

class Stamper {
 public:
  Stamper(ros::Publisher* pub, uint32_t code) : pub_(pub), code_(code) {}
  void send(std::initializer_list<uint64_t> inputs) {
    publish(*pub_, truth::make_msg(truth::make_id(code_, ++seq_), inputs));
  }

 private:
  ros::Publisher* pub_;
  uint32_t code_;
  uint64_t seq_ = 0;
};

}  // namespace hs
