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
    : link_(io, std::move(endpoints)) {
  if (!token.empty()) proto::AppendFrame(out_, proto::Opcode::kAuth, 0, kAuthId, token);
  std::vector<std::string_view> views(convs.begin(), convs.end());
  proto::AppendRequest(out_, kSubscribeId, proto::SubscribeReq{views});
}

void BenchSubscriber::Start(std::function<void(bool)> subscribed) {
  link_.Start(shared_from_this(), out_, std::move(subscribed),
              [self = shared_from_this()] { self->Read(); });
}

void BenchSubscriber::Stop() { link_.Stop(shared_from_this()); }

void BenchSubscriber::Read() {
  constexpr size_t kReadSize = 64 * 1024;
  link_.socket().async_read_some(
      asio::buffer(in_.Room(kReadSize), kReadSize),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
        self->in_.Filled(n);
        if (self->link_.stopped()) return;
        if (ec) return self->link_.Fail("read: " + ec.message());
        if (self->Parse()) self->Read();
      });
}

bool BenchSubscriber::Parse() {
  size_t pos = 0;
  for (;;) {
    const proto::DecodeResult r = proto::DecodeServerFrame(in_.From(pos));
    if (r.state == proto::DecodeState::kNeedMore) break;
    if (r.state == proto::DecodeState::kError) {
      link_.Fail("undecodable frame");
      return false;
    }
    pos += r.consumed;
    const auto resp = proto::ParseResponse(r.frame.payload);
    if (!resp) {
      link_.Fail("malformed frame");
      return false;
    }
    if (proto::IsPush(r.frame)) {
      if (r.frame.opcode == static_cast<uint8_t>(proto::kOpPushDropped)) {
        link_.Fail("PUSH_DROPPED: a subscriber fell behind");
        return false;
      }
      auto push = proto::DecodeBody<proto::PushMessage>(resp->result);
      const auto stamp = push ? PayloadStamp(push->message.payload) : std::nullopt;
      link_.Record(stamp, Clock::now(), "push without a seqbench stamp");
      continue;
    }
    if (r.frame.request_id == kAuthId && resp->status == proto::Status::kOk) continue;
    if (r.frame.request_id != kSubscribeId || resp->status != proto::Status::kOk) {
      link_.Fail("SUBSCRIBE: " + std::string(proto::StatusName(resp->status)) + " " +
                 std::string(resp->message));
      return false;
    }
    link_.result().subscribed = true;
    link_.Subscribed();
  }
  in_.Drop(pos);
  return true;
}

}  // namespace seqd::tools
