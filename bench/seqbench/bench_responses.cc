// How seqbench's connections read answers (bench_connection.h): binary
// frames matched by request id, HTTP responses and RESP replies in order;
// each one's latency and the IDs (or messages) it brought, or the error it
// was.
#include <algorithm>
#include <string>

#include "bench_connection.h"
#include "mini_http.h"
#include "proto/binary_codec.h"
#include "proto/message_codec.h"
#include "proto/snowflake_codec.h"
#include "resp_wire.h"

namespace seqd::bench {

// One request answered (or lost): its latency from `sent` to the read that
// brought the answer, unless it was sent during --warmup.
void BenchConnection::Record(Clock::time_point sent) {
  ++stats_.requests;
  cfg_.finished->fetch_add(1, std::memory_order_relaxed);
  --in_flight_;
  if (cfg_.warmup_s > 0 && sent < cfg_.start + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(cfg_.warmup_s))) {
    ++stats_.warmup_requests;
    return;
  }
  stats_.latency.Record(
      std::chrono::duration_cast<std::chrono::nanoseconds>(read_at_ - sent).count());
}

// False when the connection failed.
bool BenchConnection::ParseBinary() {
  size_t pos = 0;
  for (;;) {
    const seqd::proto::DecodeResult r = seqd::proto::DecodeFrame(in_.From(pos));
    if (r.state == seqd::proto::DecodeState::kNeedMore) break;
    if (r.state == seqd::proto::DecodeState::kError) {
      Fail("undecodable frame: " + std::string(seqd::proto::StatusName(r.error)));
      return false;
    }
    const auto resp = seqd::proto::ParseResponse(r.frame.payload);
    if (r.frame.request_id == kAuthRequestId && resp) {
      if (resp->status != seqd::proto::Status::kOk) {
        Fail("AUTH: " + std::string(seqd::proto::StatusName(resp->status)));
        return false;
      }
      pos += r.consumed;
      continue;
    }
    auto it = std::find_if(sent_.begin(), sent_.end(),
                           [id = r.frame.request_id](const auto& s) { return s.first == id; });
    if (r.frame.request_id == 0 || it == sent_.end() || !resp) {
      Fail(resp && r.frame.request_id == 0
               ? "protocol error: " + std::string(seqd::proto::StatusName(resp->status))
               : std::string("unexpected frame"));
      return false;
    }
    Record(it->second);
    if (it == sent_.begin()) {
      sent_.pop_front();  // the usual case: answers come in the order sent
    } else {
      sent_.erase(it);
    }
    if (resp->status == seqd::proto::Status::kOk) {
      CountIds(resp->result);
    } else {
      stats_.Error(std::string(seqd::proto::StatusName(resp->status)));
    }
    pos += r.consumed;
  }
  in_.Drop(pos);
  return true;
}

// Adds the IDs of an OK binary result to the stats.
void BenchConnection::CountIds(std::string_view result) {
  if (!cfg_.messages.empty()) {
    if (!seqd::proto::DecodeBody<seqd::proto::SendRes>(result)) {
      return stats_.Error("malformed SEND result");
    }
    ++stats_.ids;  // a message stored
    return;
  }
  if (cfg_.snowflake) {
    auto ids = seqd::proto::ParseSnowflakeResult(result);
    if (!ids) return stats_.Error("malformed SNOWFLAKE result");
    stats_.ids += ids->size();
    return;
  }
  if (!seqd::proto::ParseNextIdsResult(result, &ranges_)) {
    return stats_.Error("malformed NEXT_IDS result");
  }
  for (const auto& range : ranges_) stats_.ids += range.last - range.first + 1;
}

bool BenchConnection::ParseHttp() {
  size_t pos = 0;
  bool reconnect = false;
  while (!reconnect) {
    seqd::tools::HttpResponse res;
    size_t consumed = 0;
    std::string error;
    const auto st = seqd::tools::ParseHttpResponse(in_.From(pos), res, consumed, error);
    if (st == seqd::tools::HttpParse::kNeedMore) break;
    if (st == seqd::tools::HttpParse::kError || sent_order_.empty()) {
      Fail(st == seqd::tools::HttpParse::kError ? "bad HTTP response: " + error
                                                : std::string("unexpected HTTP response"));
      return false;
    }
    Record(sent_order_.front());
    sent_order_.pop_front();
    if (res.status / 100 == 2) {
      stats_.ids += cfg_.messages.empty() ? cfg_.count : 1;
    } else {
      stats_.Error("HTTP " + std::to_string(res.status));
    }
    pos += consumed;
    reconnect = !res.keep_alive;
  }
  in_.Drop(pos);
  if (reconnect) {
    // The requests still in flight are lost with the connection.
    Fail("server closed the connection");
    return false;
  }
  return true;
}

// A RESP error reply, counted by its text (the first 60 bytes; past 32
// kinds, the rest share one, so keys in the texts cannot grow the map).
void BenchConnection::RespError(std::string_view text) {
  std::string kind = "RESP -" + std::string(text.substr(0, 60));
  if (stats_.error_kinds.size() >= 32 && !stats_.error_kinds.contains(kind)) {
    kind = "RESP error (other kinds)";
  }
  stats_.Error(kind);
}

// RESP replies, in request order: an integer is the answer to INCR (count
// IDs), an error reply an error; with --token the first reply is AUTH's.
// False when the connection failed.
bool BenchConnection::ParseResp() {
  size_t pos = 0;
  for (;;) {
    seqd::tools::RespReply reply;
    size_t consumed = 0;
    std::string error;
    const auto st = seqd::tools::ParseRespReply(in_.From(pos), reply, consumed, error);
    if (st == seqd::tools::RespParse::kNeedMore) break;
    if (st == seqd::tools::RespParse::kError) {
      Fail("bad RESP reply: " + error);
      return false;
    }
    pos += consumed;
    if (resp_auth_pending_) {
      resp_auth_pending_ = false;
      if (reply.type != '+') {
        Fail("AUTH: " + std::string(reply.text.substr(0, 60)));
        return false;
      }
      continue;
    }
    if (sent_order_.empty()) {
      Fail("unexpected RESP reply");
      return false;
    }
    Record(sent_order_.front());
    sent_order_.pop_front();
    if (reply.type == ':') {
      stats_.ids += cfg_.count;
    } else if (reply.type == '-') {
      RespError(reply.text);
    } else {
      stats_.Error(std::string("RESP reply of type '") + reply.type + "', not an integer");
    }
  }
  in_.Drop(pos);
  return true;
}

}  // namespace seqd::bench
