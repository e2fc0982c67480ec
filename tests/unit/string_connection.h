// A BinaryConnection whose answers are appended to a string, for
// BinaryDispatcher tests without sockets.
//
// Thread safety: Call() from the test thread; deliveries from any thread
// (a recursive mutex stands for the strand); pushes from any thread, under
// their own lock.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "proto/binary_codec.h"
#include "server/base/manual_clock.h"
#include "server/binary/binary_dispatcher.h"

namespace seqd {

// Answer frames of the dispatcher, collected in a string.
class StringConnection final : public BinaryConnection {
 public:
  explicit StringConnection(BinaryDispatcher& d) : dispatcher_(d) {}
  std::string& out() override { return out_; }
  void Queued() override { ++queued_; }
  void Hold() override { ++held_; }
  void Deliver(std::function<void(BinaryConnection&)> write) override {
    std::lock_guard lock(mu_);
    --held_;
    write(*this);
    cv_.notify_all();
  }
  void DeliverIds(uint32_t id, Result<IdBatch> r) override {
    std::lock_guard lock(mu_);
    --held_;
    dispatcher_.WriteIds(*this, id, r);
    cv_.notify_all();
  }
  bool batching() const override { return batching_; }
  void DeliverRun(uint32_t run, Result<IdBatch> r) override {
    std::lock_guard lock(mu_);
    held_ -= static_cast<int>(runs().asks(run).size());
    dispatcher_.WriteRun(*this, run, r);
    cv_.notify_all();
  }
  void CloseAfterAnswers() override { close_after_ = true; }
  SubscriptionMap& subscriptions() override { return subs_; }
  // Records each push as "conv#seq". Like the real push box it takes its own
  // lock, never the strand's (the bus calls listeners under its lock, and
  // unsubscribing on the strand takes the bus's lock).
  MessageListener PushListener() override {
    return [this](const StoredMessage& m) {
      std::lock_guard lock(push_mu_);
      pushed_.push_back(m.conv_id + "#" + std::to_string(m.seq));
    };
  }

  // The pushes so far, as "conv#seq", in the order they came.
  std::vector<std::string> pushed() {
    std::lock_guard lock(push_mu_);
    return pushed_;
  }
  // Whether the dispatcher asked to close once the answers are written.
  bool close_after() {
    std::lock_guard lock(mu_);
    return close_after_;
  }
  // Answers held in flight (counted by Hold, released by the deliveries).
  int held() {
    std::lock_guard lock(mu_);
    return held_;
  }

  // The frames handled as one read's (NEXT_IDS of one key gathered into
  // runs), then the answers once every one came, in the order written.
  std::vector<std::string> CallBatch(const std::vector<std::string>& frames, ManualClock& clock) {
    {
      std::lock_guard lock(mu_);
      batching_ = true;
      for (const std::string& frame : frames) {
        const proto::DecodeResult r = proto::DecodeFrame(frame);
        REQUIRE(r.state == proto::DecodeState::kFrame);
        dispatcher_.Handle(r.frame, *this);
      }
      dispatcher_.EndOfBatch(*this);
      batching_ = false;
    }
    const int want = answered_ + static_cast<int>(frames.size());
    std::unique_lock lock(mu_);
    for (int i = 0; i < 100 && !(held_ == 0 && queued_ >= want); ++i) {
      lock.unlock();
      clock.Advance(std::chrono::milliseconds(500));
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(20),
                   [&] { return held_ == 0 && queued_ >= want; });
    }
    REQUIRE((held_ == 0 && queued_ == want));
    std::vector<std::string> answers;
    while (read_ < out_.size()) {
      const proto::DecodeResult r = proto::DecodeFrame(std::string_view(out_).substr(read_));
      REQUIRE(r.state == proto::DecodeState::kFrame);
      answers.push_back(out_.substr(read_, r.consumed));
      read_ += r.consumed;
    }
    answered_ = want;
    return answers;
  }

  // The whole answer frame to `frame` (its status and message included),
  // advancing `clock` while the answer is parked on a deadline.
  std::string Call(const std::string& frame, ManualClock& clock) {
    const proto::DecodeResult r = proto::DecodeFrame(frame);
    REQUIRE(r.state == proto::DecodeState::kFrame);
    {
      std::lock_guard lock(mu_);
      dispatcher_.Handle(r.frame, *this);
    }
    std::unique_lock lock(mu_);
    // A parked NEXT_IDS is answered at its deadline: let time pass.
    for (int i = 0; i < 100 && !(held_ == 0 && queued_ > answered_); ++i) {
      lock.unlock();
      clock.Advance(std::chrono::milliseconds(500));
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(20),
                   [&] { return held_ == 0 && queued_ > answered_; });
    }
    REQUIRE((held_ == 0 && queued_ > answered_));
    ++answered_;
    std::string answer = out_.substr(read_);
    read_ = out_.size();
    return answer;
  }

 private:
  BinaryDispatcher& dispatcher_;
  std::recursive_mutex mu_;
  std::condition_variable_any cv_;
  std::string out_;
  size_t read_ = 0;
  int queued_ = 0;
  int answered_ = 0;
  int held_ = 0;
  bool batching_ = false;
  bool close_after_ = false;
  SubscriptionMap subs_;
  std::mutex push_mu_;
  std::vector<std::string> pushed_;  // guarded by push_mu_
};

// The status and body of one answer frame.
inline proto::ResponseView AnswerView(const std::string& answer) {
  const proto::DecodeResult r = proto::DecodeFrame(answer);
  REQUIRE(r.state == proto::DecodeState::kFrame);
  auto view = proto::ParseResponse(
      std::string_view(answer).substr(proto::kHeaderSize, r.consumed - proto::kHeaderSize));
  REQUIRE(view);
  return *view;
}

}  // namespace seqd
