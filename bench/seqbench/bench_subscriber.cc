#include "bench_subscriber.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>

#include "proto/binary_codec.h"
#include "proto/message_codec.h"

namespace seqd::tools {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {
constexpr uint32_t kAuthId = 1, kSubscribeId = 2;
constexpr size_t kStampDigits = 16;
}  // namespace

std::string StampedPayload(Clock::time_point sent, size_t size) {
  char buf[kStampDigits + 1];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(sent.time_since_epoch().count()));
  std::string out(buf, kStampDigits);
  if (size > kStampDigits) out.append(size - kStampDigits, 'x');
  return out;
}

std::optional<Clock::time_point> PayloadStamp(std::string_view payload) {
  if (payload.size() < kStampDigits) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 0; i < kStampDigits; ++i) {
    const char c = payload[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return Clock::time_point(Clock::duration(static_cast<Clock::rep>(v)));
}

BenchSubscriber::BenchSubscriber(asio::io_context& io, tcp::resolver::results_type endpoints,
                                 std::vector<std::string> convs, std::string token)
    : strand_(asio::make_strand(io)),
      socket_(strand_),
      endpoints_(std::move(endpoints)),
      convs_(std::move(convs)),
      token_(std::move(token)) {}

void BenchSubscriber::Start(std::function<void(bool)> subscribed) {
  asio::post(strand_, [self = shared_from_this(), subscribed = std::move(subscribed)]() mutable {
    self->subscribed_ = std::move(subscribed);
    asio::async_connect(
        self->socket_, self->endpoints_,
        [self](const boost::system::error_code& ec, const tcp::endpoint&) {
          if (ec) return self->Fail("connect: " + ec.message());
          self->socket_.set_option(tcp::no_delay(true));
          if (!self->token_.empty()) {
            proto::AppendFrame(self->out_, proto::Opcode::kAuth, 0, kAuthId, self->token_);
          }
          std::vector<std::string_view> views(self->convs_.begin(), self->convs_.end());
          proto::AppendRequest(self->out_, kSubscribeId, proto::SubscribeReq{views});
          asio::async_write(self->socket_, asio::buffer(self->out_),
                            [self](const boost::system::error_code& ec, size_t) {
                              if (ec) self->Fail("write: " + ec.message());
                            });
          self->Read();
        });
  });
}

void BenchSubscriber::Stop() {
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    boost::system::error_code ignored;
    self->socket_.close(ignored);
  });
}

void BenchSubscriber::Fail(const std::string& what) {
  if (stopped_) return;
  stopped_ = true;
  ++result_.errors;
  ++result_.error_kinds[what];
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (subscribed_) std::exchange(subscribed_, nullptr)(false);
}

void BenchSubscriber::Read() {
  constexpr size_t kReadSize = 64 * 1024;
  socket_.async_read_some(
      asio::buffer(in_.Room(kReadSize), kReadSize),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
        self->in_.Filled(n);
        if (self->stopped_) return;
        if (ec) return self->Fail("read: " + ec.message());
        if (self->Parse()) self->Read();
      });
}

bool BenchSubscriber::Parse() {
  size_t pos = 0;
  for (;;) {
    const proto::DecodeResult r = proto::DecodeServerFrame(in_.From(pos));
    if (r.state == proto::DecodeState::kNeedMore) break;
    if (r.state == proto::DecodeState::kError) {
      Fail("undecodable frame");
      return false;
    }
    pos += r.consumed;
    const auto resp = proto::ParseResponse(r.frame.payload);
    if (!resp) {
      Fail("malformed frame");
      return false;
    }
    if (proto::IsPush(r.frame)) {
      if (r.frame.opcode == static_cast<uint8_t>(proto::kOpPushDropped)) {
        Fail("PUSH_DROPPED: a subscriber fell behind");
        return false;
      }
      auto push = proto::DecodeBody<proto::PushMessage>(resp->result);
      const auto stamp = push ? PayloadStamp(push->message.payload) : std::nullopt;
      if (!stamp) {
        ++result_.errors;
        ++result_.error_kinds["push without a seqbench stamp"];
        continue;
      }
      ++result_.pushes;
      if (counter_) counter_->fetch_add(1, std::memory_order_relaxed);
      result_.latency.Record(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - *stamp).count());
      continue;
    }
    if (r.frame.request_id == kAuthId && resp->status == proto::Status::kOk) continue;
    if (r.frame.request_id != kSubscribeId || resp->status != proto::Status::kOk) {
      Fail("SUBSCRIBE: " + std::string(proto::StatusName(resp->status)) + " " +
           std::string(resp->message));
      return false;
    }
    result_.subscribed = true;
    if (subscribed_) std::exchange(subscribed_, nullptr)(true);
  }
  in_.Drop(pos);
  return true;
}

}  // namespace seqd::tools
