// A whole binary-protocol session: the real BinaryServer session code, a real
// allocator over a memory store, a real snowflake generator (16 IDs per
// millisecond, so requests park) and a real message service over a memory
// message store (SEND, PULL, SUBSCRIBE and pushes to this very connection),
// fed from a socketpair (no network). The harness writes the input,
// half-closes, and reads every response until the server closes; it checks
// what came back.
//
// Inputs with an AUTH frame go to a second server with tokens
// (tests/fuzz/fuzz_tokens.h); the others to an open one.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "proto/binary_codec.h"
#include "proto/message_codec.h"
#include "proto/snowflake_codec.h"
#include "server/base/asio_clock.h"
#include "server/base/log.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "server/binary/binary_server.h"
#include "storage/memory/memory_store.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/fuzz_tokens.h"
#include "tests/fuzz/fuzz_worlds.h"
#include "tests/unit/test_services.h"

namespace seqd::fuzz {

namespace {

// Two binary servers, one open and one with the fuzz tokens, and a
// snowflake generator holding worker 5.
struct SessionWorld : AllocatorOnIo {
  SessionWorld()
      : AllocatorOnIo(ShortWaitAllocatorOptions()),
        snowflake(wall, clock, ShortWaitSnowflakeOptions()),
        services(store, db, allocator, {.snowflake = &snowflake}),
        server(io, ServerOptions(), services),
        authed(io, ServerOptions(), ServicesWithAuth(services, auth.get())) {
    snowflake.Grant(5, 0, wall.NowMs() + 24 * 3'600'000,
                    clock.Now() + std::chrono::hours(24 * 365));
    thread = std::thread([this] { io.run(); });
  }

  static BinaryServerOptions ServerOptions() {
    BinaryServerOptions o;
    o.max_in_flight = 64;
    o.max_frame_bytes = 4096;
    return o;
  }

  SystemWallClock wall;
  SnowflakeGenerator snowflake;
  TestServices services;  // messages in memory, metrics
  BinaryServer server;
  BinaryServer authed;
  std::thread thread;
};

SessionWorld& World() { return ProcessWorld<SessionWorld>(); }

}  // namespace

void BinarySession(const uint8_t* data, size_t size) {
  SessionWorld& world = World();
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // What each request asked for, by request id: NEXT_IDS keys (IDs are
  // unique per key), SEND conversations (seqs are unique per conversation),
  // PULL_RANGE limits; SUBSCRIBE conversations (the only ones pushed to).
  // Request ids reused for different requests are not checked.
  std::map<uint32_t, std::string> key_of;
  std::map<uint32_t, std::string> conv_of;
  std::map<uint32_t, proto::PullRangeReq> pull_of;
  std::map<uint32_t, uint8_t> opcode_of;
  std::set<uint32_t> ambiguous;
  std::set<std::string, std::less<>> subscribed;
  bool with_auth = false;
  for (std::string_view in = input; !in.empty();) {
    const proto::DecodeResult r =
        proto::DecodeFrame(in, SessionWorld::ServerOptions().max_frame_bytes);
    if (r.state != proto::DecodeState::kFrame) break;
    const uint32_t id = r.frame.request_id;
    const auto [it, fresh] = opcode_of.emplace(id, r.frame.opcode);
    if (!fresh) ambiguous.insert(id);
    if (r.frame.opcode == static_cast<uint8_t>(proto::Opcode::kAuth)) with_auth = true;
    if (auto req = proto::ParseNextIdsRequest(r.frame.payload)) {
      key_of.emplace(id, std::string(req->key));
    }
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpSend)) {
      if (auto req = proto::DecodeBody<proto::SendReq>(r.frame.payload)) {
        conv_of.emplace(id, std::string(req->conv_id));
      }
    }
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpPullRange)) {
      if (auto req = proto::DecodeBody<proto::PullRangeReq>(r.frame.payload)) {
        pull_of.emplace(id, *req);
      }
    }
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpSubscribe)) {
      if (auto req = proto::DecodeBody<proto::SubscribeReq>(r.frame.payload)) {
        for (std::string_view conv : req->conv_ids) subscribed.emplace(conv);
      }
    }
    in.remove_prefix(r.consumed);
  }

  int fds[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  FUZZ_CHECK((with_auth ? world.authed : world.server).Serve(fds[0]).ok());
  const std::string output = Exchange(fds[1], input);
  ::close(fds[1]);

  // Every byte back is a well-formed response or push frame; a key's IDs
  // and a conversation's seqs never repeat; a protocol error, if any, is
  // the last frame.
  std::string_view rest = output;
  std::map<std::string, std::set<int64_t>> ids;
  std::map<std::string, std::set<int64_t>> seqs;
  std::set<int64_t> snowflake_ids;
  bool saw_protocol_error = false;
  while (!rest.empty()) {
    const proto::DecodeResult r = proto::DecodeServerFrame(rest);
    FUZZ_CHECK(r.state == proto::DecodeState::kFrame);
    FUZZ_CHECK(!saw_protocol_error);
    FUZZ_CHECK(r.frame.is_response());
    const auto response = proto::ParseResponse(r.frame.payload);
    FUZZ_CHECK(response.has_value());
    rest.remove_prefix(r.consumed);
    const uint32_t id = r.frame.request_id;
    const bool ok = response->status == proto::Status::kOk;
    if (proto::IsPush(r.frame)) {
      // Pushes carry no request id, and only for conversations subscribed.
      FUZZ_CHECK(id == 0);
      if (r.frame.opcode == static_cast<uint8_t>(proto::kOpPushDropped)) continue;
      FUZZ_CHECK(r.frame.opcode == static_cast<uint8_t>(proto::kOpPushMessage) && ok);
      const auto push = proto::DecodeBody<proto::PushMessage>(response->result);
      FUZZ_CHECK(push.has_value());
      FUZZ_CHECK(subscribed.count(push->conv_id) == 1);
      FUZZ_CHECK(push->message.seq >= 1);
      continue;
    }
    if (proto::IsProtocolError(response->status)) {
      saw_protocol_error = true;
      FUZZ_CHECK(r.frame.opcode == 0 && id == 0);
      continue;
    }
    // Only requests get answers, with their opcode.
    const auto asked = opcode_of.find(id);
    FUZZ_CHECK(asked != opcode_of.end());
    if (!ambiguous.count(id)) FUZZ_CHECK(asked->second == r.frame.opcode);
    if (!ok || ambiguous.count(id)) continue;
    if (r.frame.opcode == static_cast<uint8_t>(proto::Opcode::kNextIds)) {
      const auto ranges = proto::ParseNextIdsResult(response->result);
      FUZZ_CHECK(ranges.has_value() && !ranges->empty());
      const auto key = key_of.find(id);
      FUZZ_CHECK(key != key_of.end());
      for (const auto& range : *ranges) {
        FUZZ_CHECK(range.first <= range.last && range.last - range.first < 10'000);
        for (int64_t v = range.first; v <= range.last; ++v) {
          FUZZ_CHECK(ids[key->second].insert(v).second);
        }
      }
    }
    // Snowflake IDs never repeat, ascend within an answer, and are this
    // generator's (worker 5).
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpSnowflake)) {
      const auto got = proto::ParseSnowflakeResult(response->result);
      FUZZ_CHECK(got.has_value() && !got->empty() && got->size() <= 100);
      for (size_t i = 0; i < got->size(); ++i) {
        FUZZ_CHECK(i == 0 || (*got)[i - 1] < (*got)[i]);
        FUZZ_CHECK(((*got)[i] >> 4 & 1023) == 5);
        FUZZ_CHECK(snowflake_ids.insert((*got)[i]).second);
      }
    }
    // A stored send has a seq no other send of its conversation got.
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpSend)) {
      const auto sent = proto::DecodeBody<proto::SendRes>(response->result);
      FUZZ_CHECK(sent.has_value() && sent->seq >= 1);
      const auto conv = conv_of.find(id);
      FUZZ_CHECK(conv != conv_of.end());
      if (!sent->duplicate) FUZZ_CHECK(seqs[conv->second].insert(sent->seq).second);
    }
    // A pull answers at most its limit, in the order asked.
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpPullRange)) {
      const auto pulled = proto::DecodeBody<proto::PullRangeRes>(response->result);
      FUZZ_CHECK(pulled.has_value());
      const auto req = pull_of.find(id);
      FUZZ_CHECK(req != pull_of.end());
      FUZZ_CHECK(pulled->messages.size() <= req->second.limit);
      for (size_t i = 0; i < pulled->messages.size(); ++i) {
        const int64_t seq = pulled->messages[i].seq;
        FUZZ_CHECK(seq >= 1);
        if (i > 0) {
          const int64_t prev = pulled->messages[i - 1].seq;
          FUZZ_CHECK(req->second.descending ? prev > seq : prev < seq);
        }
      }
    }
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpPullSeqs)) {
      FUZZ_CHECK(proto::DecodeBody<proto::PullSeqsRes>(response->result).has_value());
    }
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpMaxSeqs)) {
      FUZZ_CHECK(proto::DecodeBody<proto::MaxSeqsRes>(response->result).has_value());
    }
    if (r.frame.opcode == static_cast<uint8_t>(proto::kOpSyncUser)) {
      FUZZ_CHECK(proto::DecodeBody<proto::SyncUserRes>(response->result).has_value());
    }
  }
}

}  // namespace seqd::fuzz
