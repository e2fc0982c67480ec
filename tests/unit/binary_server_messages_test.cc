// BinaryServer's message store ops and pushes over real loopback sockets,
// with the real MessageService over a MemoryMessageStore (messages) and a
// MemoryStore (server message ids).
#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proto/binary_codec.h"
#include "proto/message_codec.h"
#include "server/msg/message_service.h"
#include "server/binary/binary_server.h"
#include "storage/memory/memory_message_store.h"
#include "tests/unit/binary_test_client.h"
#include "tests/unit/net_test_support.h"
#include "tests/unit/test_services.h"

using namespace seqd;
using namespace seqd::nettest;
using namespace std::chrono_literals;
using WireStatus = proto::Status;

namespace {

// a + b, spelled so GCC 12 raises no false -Wrestrict on it.
inline std::string Cat(std::string a, const std::string& b) {
  a += b;
  return a;
}

// Built before the server: the message service and its stores.
struct MessageFront {
  MessageFront(SegmentStore& store, TaskRunner& db, SegmentAllocator& allocator)
      : allocator(allocator),
        service(messages, ids, Options()),
        services(store, db, allocator, {.messages = &service}) {}
  static MessageServiceOptions Options() {
    MessageServiceOptions o;
    o.writers = 2;
    o.readers = 2;
    return o;
  }
  SegmentAllocator& allocator;
  MemoryMessageStore messages;
  MemoryStore ids;
  MessageService service;
  TestServices services;
  const Services& target = services;
};

using World = ServerWorld<BinaryServer, BinaryServerOptions, MessageFront>;

// A frame whose result decodes to a message op's answer.
struct Frame : binarytest::Frame {
  template <typename T>
  T Result() const {
    proto::ResponseView r = response();
    REQUIRE_MESSAGE(r.status == WireStatus::kOk, proto::StatusName(r.status) << ": " << r.message);
    auto v = proto::DecodeBody<T>(r.result);
    REQUIRE(v);
    return *v;
  }
};

class Client : public LoopbackClient {
 public:
  explicit Client(uint16_t port) : LoopbackClient(port, 65536) {}

  void SetReceiveBuffer(int bytes) {
    socket().set_option(net::socket_base::receive_buffer_size(bytes));
  }

  std::optional<Frame> Read(SteadyClock::duration timeout = 5s) {
    const auto deadline = SteadyClock::now() + timeout;
    for (;;) {
      proto::DecodeResult r = proto::DecodeServerFrame(buffer());
      if (r.state == proto::DecodeState::kFrame) {
        Frame f{{r.frame.opcode, r.frame.flags, r.frame.request_id, std::string(r.frame.payload)}};
        buffer().erase(0, r.consumed);
        return f;
      }
      REQUIRE(r.state == proto::DecodeState::kNeedMore);
      if (ReadSome(deadline)) return std::nullopt;
    }
  }

  // Sends `req` and reads frames until its answer (pushes are kept aside).
  template <typename Req>
  Frame Call(const Req& req) {
    const uint32_t id = next_id_++;
    std::string out;
    proto::AppendRequest(out, id, req);
    Send(out);
    for (;;) {
      std::optional<Frame> f = Read();
      REQUIRE(f);
      if (f->flags & proto::kFlagPush) {
        pushes.push_back(*f);
        continue;
      }
      CHECK(f->request_id == id);
      CHECK(f->opcode == static_cast<uint8_t>(Req::kOpcode));
      CHECK(f->flags == proto::kFlagResponse);
      return *f;
    }
  }

  std::vector<Frame> pushes;

 private:
  uint32_t next_id_ = 1;
};

proto::SendReq Msg(std::string_view conv, std::string_view client_id, std::string_view payload,
                   std::string_view sender = "u1") {
  return proto::SendReq{conv, sender, client_id, 1, payload};
}

proto::PullRangeReq Range(std::string_view conv, int64_t from, int64_t to, uint32_t limit,
                          bool desc = false, std::string_view user = {}) {
  return proto::PullRangeReq{conv, from, to, limit, desc, user};
}

}  // namespace

TEST_CASE(
    "binary messages: send, pull both ways, re-send is a duplicate, other content a conflict") {
  World w;
  REQUIRE(w.listening);
  Client c(w.server.port());
  REQUIRE(c.connected());
  for (int i = 1; i <= 3; ++i) {
    const std::string cid = Cat("c", std::to_string(i));
    auto r = c.Call(Msg("sg_1", cid, Cat("hello ", std::to_string(i)))).Result<proto::SendRes>();
    CHECK(r.seq == i);
    CHECK_FALSE(r.duplicate);
    CHECK(r.server_msg_id > 0);
  }
  auto first = c.Call(Msg("sg_1", "c1", "hello 1")).Result<proto::SendRes>();
  CHECK(first.seq == 1);
  CHECK(first.duplicate);

  // The same client id with another payload or content type is another
  // message: MESSAGE_ID_CONFLICT, nothing stored, the connection stays.
  for (const proto::SendReq& other :
       {Msg("sg_1", "c1", "hello 2"), proto::SendReq{"sg_1", "u1", "c1", 2, "hello 1"}}) {
    Frame refused_frame = c.Call(other);  // the view below points into it
    proto::ResponseView refused = refused_frame.response();
    CHECK(refused.status == WireStatus::kMessageIdConflict);
    CHECK(refused.message.find("client_msg_id") != std::string_view::npos);
  }
  CHECK(c.Call(Msg("sg_1", "c1", "hello 1")).Result<proto::SendRes>().seq == 1);

  Frame page_frame = c.Call(Range("sg_1", 1, 0, 100));
  auto page = page_frame.Result<proto::PullRangeRes>();
  CHECK(page.is_end);
  REQUIRE(page.messages.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(page.messages[i].seq == i + 1);
    CHECK(page.messages[i].payload == Cat("hello ", std::to_string(i + 1)));
    CHECK(page.messages[i].sender_id == "u1");
  }
  Frame desc_frame = c.Call(Range("sg_1", 1, 3, 2, true));
  auto desc = desc_frame.Result<proto::PullRangeRes>();
  CHECK_FALSE(desc.is_end);
  REQUIRE(desc.messages.size() == 2);
  CHECK(desc.messages[0].seq == 3);
  CHECK(desc.messages[1].seq == 2);

  Frame seqs_frame = c.Call(proto::PullSeqsReq{"sg_1", {}, {3, 1, 9}});
  auto seqs = seqs_frame.Result<proto::PullSeqsRes>();
  REQUIRE(seqs.messages.size() == 2);
  CHECK(seqs.messages[0].seq == 1);
  CHECK(seqs.messages[1].seq == 3);

  auto max = c.Call(proto::MaxSeqsReq{{"sg_1", "sg_none"}}).Result<proto::MaxSeqsRes>();
  CHECK(max.max_seqs == std::vector<int64_t>{3, 0});
}

TEST_CASE("binary messages: members, read seq, sync, status, min seq") {
  World w;
  REQUIRE(w.listening);
  Client c(w.server.port());
  for (int i = 1; i <= 4; ++i) c.Call(Msg("sg_2", Cat("m", std::to_string(i)), "x", "u1"));
  // u2 joins at seq 3.
  auto m = c.Call(proto::SetMemberReq{"sg_2", "u2", 3, std::nullopt, false})
               .Result<proto::MemberRes>()
               .member;
  CHECK(m.min_seq == 3);
  CHECK(m.read_seq == 2);
  CHECK_FALSE(m.max_seq);
  CHECK(c.Call(proto::GetMemberReq{"sg_2", "u2"}).Result<proto::MemberRes>().member == m);
  CHECK(c.Call(proto::GetMemberReq{"sg_2", "nobody"}).status() == WireStatus::kNotFound);

  auto read = c.Call(proto::MarkReadReq{"sg_2", "u2", 3}).Result<proto::MemberRes>().member;
  CHECK(read.read_seq == 3);
  CHECK(c.Call(proto::MarkReadReq{"sg_2", "u2", 2}).status() == WireStatus::kFailedPrecondition);
  CHECK(c.Call(proto::MarkReadReq{"sg_2", "u2", 99}).status() == WireStatus::kFailedPrecondition);

  // u2's window starts at 3.
  Frame pf = c.Call(Range("sg_2", 1, 0, 100, false, "u2"));
  auto page = pf.Result<proto::PullRangeRes>();
  REQUIRE(page.messages.size() == 2);
  CHECK(page.messages[0].seq == 3);

  Frame sf = c.Call(proto::SyncUserReq{"u2", {"sg_2"}});
  auto sync = sf.Result<proto::SyncUserRes>();
  REQUIRE(sync.convs.size() == 1);
  CHECK(sync.convs[0].conv_id == "sg_2");
  CHECK(sync.convs[0].max_seq == 4);
  CHECK(sync.convs[0].min_seq == 3);
  CHECK(sync.convs[0].read_seq == 3);
  CHECK(sync.convs[0].unread == 1);
  CHECK(sync.convs[0].member);

  Frame rf = c.Call(proto::SetStatusReq{"sg_2", 4, 1});
  auto recalled = rf.Result<proto::MessageRes>().message;
  CHECK(recalled.seq == 4);
  CHECK(recalled.status == 1);
  CHECK(recalled.payload.empty());
  CHECK(c.Call(proto::SetStatusReq{"sg_2", 40, 2}).status() == WireStatus::kNotFound);

  CHECK(c.Call(proto::SetConvMinSeqReq{"sg_2", 2}).Result<proto::MinSeqRes>().min_seq == 2);
}

TEST_CASE("binary messages: bad input is answered and the connection stays open") {
  BinaryServerOptions o;
  World w(o);
  REQUIRE(w.listening);
  Client c(w.server.port());
  const std::string big(w.front.service.options().max_payload_bytes + 1, 'x');
  CHECK(c.Call(Msg("sg_3", "c1", big)).status() == WireStatus::kTooLarge);
  CHECK(c.Call(Msg("bad\tid!", "c1", "x")).status() == WireStatus::kInvalidArgument);
  CHECK(c.Call(Msg("sg_3", "", "x")).status() == WireStatus::kInvalidArgument);
  CHECK(c.Call(Range("sg_3", 1, 0, 0)).status() == WireStatus::kInvalidArgument);
  CHECK(c.Call(Range("sg_3", 1, 0, 5000)).status() == WireStatus::kInvalidArgument);
  CHECK(c.Call(Range("sg_3", -5, 0, 10)).status() == WireStatus::kInvalidArgument);
  CHECK(c.Call(Range("sg_3", 5, 2, 10)).status() == WireStatus::kInvalidArgument);
  CHECK(c.Call(Range("sg_3", 1, 0, 0xFFFFFFFFu)).status() == WireStatus::kInvalidArgument);
  proto::MaxSeqsReq many;
  std::vector<std::string> names;
  for (int i = 0; i < 1001; ++i) names.push_back(Cat("c", std::to_string(i)));
  for (const auto& n : names) many.conv_ids.push_back(n);
  CHECK(c.Call(many).status() == WireStatus::kTooLarge);
  proto::SubscribeReq subs;
  subs.conv_ids = many.conv_ids;
  CHECK(c.Call(subs).status() == WireStatus::kTooLarge);

  // Malformed payloads: short, a count the bytes cannot hold, a byte left over.
  std::string raw;
  proto::AppendFrame(raw, proto::kOpSend, 0, 77, std::string("\0\4sg", 4));
  proto::AppendFrame(raw, proto::kOpMaxSeqs, 0, 78, std::string("\xff\xff\xff\xff", 4));
  proto::AppendFrame(raw, proto::kOpGetMember, 0, 79, std::string("\0\1a\0\1b\0", 7));
  proto::AppendFrame(raw, proto::kOpPushMessage, 0, 80, "");
  c.Send(raw);
  for (uint32_t id = 77; id <= 80; ++id) {
    std::optional<Frame> f = c.Read();
    REQUIRE(f);
    CHECK(f->request_id == id);
    CHECK(f->status() == WireStatus::kInvalidArgument);
  }
  CHECK(c.Call(Msg("sg_3", "ok", "fine")).Result<proto::SendRes>().seq == 1);
}

TEST_CASE("binary messages: a subscriber gets every message pushed in seq order") {
  World w;
  REQUIRE(w.listening);
  Client sub(w.server.port());
  Client sender(w.server.port());
  CHECK(sub.Call(proto::SubscribeReq{{"sg_p", "sg_q"}}).status() == WireStatus::kOk);
  // Twice is a no-op.
  CHECK(sub.Call(proto::SubscribeReq{{"sg_p"}}).status() == WireStatus::kOk);
  constexpr int kMessages = 60;
  // Pipelined sends to two conversations.
  std::string out;
  for (int i = 0; i < kMessages; ++i) {
    const std::string cid = Cat("c", std::to_string(i));
    proto::AppendRequest(out, 1000 + i,
                         Msg(i % 2 ? "sg_p" : "sg_q", cid, Cat("m", std::to_string(i))));
  }
  sender.Send(out);
  for (int i = 0; i < kMessages; ++i) {
    std::optional<Frame> f = sender.Read();
    REQUIRE(f);
    CHECK(f->status() == WireStatus::kOk);
  }
  std::map<std::string, int64_t> last;
  for (int got = 0; got < kMessages;) {
    std::optional<Frame> f = sub.Read();
    REQUIRE(f);
    REQUIRE(f->flags == (proto::kFlagResponse | proto::kFlagPush));
    CHECK(f->request_id == 0);
    REQUIRE(f->opcode == static_cast<uint8_t>(proto::kOpPushMessage));
    auto p = f->Result<proto::PushMessage>();
    CHECK(p.message.seq == last[std::string(p.conv_id)] + 1);
    last[std::string(p.conv_id)] = p.message.seq;
    ++got;
  }
  CHECK(last["sg_p"] == kMessages / 2);
  CHECK(last["sg_q"] == kMessages / 2);

  // Unsubscribed: nothing more from sg_q; sg_p still comes.
  CHECK(sub.Call(proto::UnsubscribeReq{{"sg_q", "never"}}).status() == WireStatus::kOk);
  CHECK(sender.Call(Msg("sg_q", "after1", "x")).status() == WireStatus::kOk);
  CHECK(sender.Call(Msg("sg_p", "after2", "y")).status() == WireStatus::kOk);
  std::optional<Frame> f = sub.Read();
  REQUIRE(f);
  auto p = f->Result<proto::PushMessage>();
  CHECK(p.conv_id == "sg_p");
  CHECK(p.message.client_msg_id == "after2");
  CHECK_FALSE(sub.Read(200ms));
}

TEST_CASE("binary messages: a slow subscriber is dropped, bounded, and told so") {
  BinaryServerOptions o;
  o.max_frame_bytes = 128 * 1024;
  o.max_output_bytes = 256 * 1024;
  World w(o);
  REQUIRE(w.listening);
  Client sub(w.server.port());
  sub.SetReceiveBuffer(16 * 1024);
  Client sender(w.server.port());
  CHECK(sub.Call(proto::SubscribeReq{{"sg_slow"}}).status() == WireStatus::kOk);
  // The subscriber reads nothing while ~16 MB of pushes are due.
  const std::string payload(60 * 1024, 'p');
  constexpr int kMessages = 280;
  for (int i = 0; i < kMessages; i += 20) {
    std::string out;
    for (int j = i; j < i + 20; ++j) {
      proto::AppendRequest(out, 1 + j, Msg("sg_slow", Cat("c", std::to_string(j)), payload));
    }
    sender.Send(out);
    for (int j = i; j < i + 20; ++j) {
      std::optional<Frame> f = sender.Read();
      REQUIRE(f);
      REQUIRE(f->status() == WireStatus::kOk);
    }
  }
  // Now read: pushes in order from seq 1, then PUSH_DROPPED, then nothing.
  int64_t last = 0;
  bool dropped = false;
  while (!dropped) {
    std::optional<Frame> f = sub.Read();
    REQUIRE(f);
    REQUIRE((f->flags & proto::kFlagPush) != 0);
    if (f->opcode == static_cast<uint8_t>(proto::kOpPushDropped)) {
      CHECK(f->status() == WireStatus::kTooLarge);
      dropped = true;
      break;
    }
    auto p = f->Result<proto::PushMessage>();
    CHECK(p.message.seq == last + 1);
    last = p.message.seq;
  }
  CHECK(last < kMessages);  // bounded: most were never queued
  CHECK(last > 0);
  // No pushes after the drop, and the connection still answers.
  CHECK(sender.Call(Msg("sg_slow", "late", "x")).status() == WireStatus::kOk);
  CHECK_FALSE(sub.Read(200ms));
  CHECK(sub.Call(Range("sg_slow", last + 1, 0, 1)).Result<proto::PullRangeRes>().messages.size() ==
        1);
  // Subscribing again works.
  CHECK(sub.Call(proto::SubscribeReq{{"sg_slow"}}).status() == WireStatus::kOk);
  CHECK(sender.Call(Msg("sg_slow", "later", "x")).status() == WireStatus::kOk);
  std::optional<Frame> again = sub.Read();
  REQUIRE(again);
  CHECK(again->Result<proto::PushMessage>().message.client_msg_id == "later");
}

TEST_CASE("binary messages: a pull page is cut to fit one frame") {
  BinaryServerOptions o;
  o.max_frame_bytes = 128 * 1024;
  World w(o);
  REQUIRE(w.listening);
  Client c(w.server.port());
  const std::string payload(50 * 1024, 'q');
  for (int i = 0; i < 5; ++i) c.Call(Msg("sg_big", Cat("c", std::to_string(i)), payload));
  Frame f = c.Call(Range("sg_big", 1, 0, 100));
  auto page = f.Result<proto::PullRangeRes>();
  CHECK(page.messages.size() == 2);
  CHECK_FALSE(page.is_end);
  CHECK(f.payload.size() + proto::kHeaderSize <= o.max_frame_bytes);
  Frame g = c.Call(proto::PullSeqsReq{"sg_big", {}, {1, 2, 3, 4, 5}});
  CHECK(g.Result<proto::PullSeqsRes>().messages.size() == 2);
}

TEST_CASE("binary messages: closing a subscribed connection while messages flow") {
  World w;
  REQUIRE(w.listening);
  Client sender(w.server.port());
  for (int round = 0; round < 5; ++round) {
    Client sub(w.server.port());
    CHECK(sub.Call(proto::SubscribeReq{{"sg_c"}}).status() == WireStatus::kOk);
    std::string out;
    for (int j = 0; j < 50; ++j) {
      proto::AppendRequest(
          out, 1 + j,
          Msg("sg_c", Cat("r", std::to_string(round)) + Cat("_", std::to_string(j)), "x"));
    }
    sender.Send(out);
    sub.Close();
    for (int j = 0; j < 50; ++j) REQUIRE(sender.Read());
  }
  CHECK(WaitFor([&] { return w.server.open_connections() == 1; }));
}
