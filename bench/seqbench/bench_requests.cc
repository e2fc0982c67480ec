// What seqbench's connections ask (bench_connection.h): NEXT_IDS of --key
// or of a fresh --new-keys key, SNOWFLAKE, or a SEND of a --messages message,
// as a binary frame or an HTTP request; or INCR / INCRBY of the key (--resp).
#include <string>

#include "bench_connection.h"
#include "bench_subscriber.h"
#include "mini_http.h"
#include "proto/binary_codec.h"
#include "proto/message_codec.h"
#include "proto/snowflake_codec.h"
#include "resp_wire.h"

namespace seqd::bench {

std::string BenchConnection::HttpRequestFor(const std::string& key) const {
  const std::string path = cfg_.snowflake ? "/snowflake" : "/seq/" + seqd::tools::UrlEncode(key);
  return seqd::tools::BuildHttpRequest("GET", path + "?count=" + std::to_string(cfg_.count),
                                       cfg_.endpoint, {}, "application/json", cfg_.token);
}

// INCR KEY, or INCRBY KEY C for --count C > 1.
std::string BenchConnection::RespRequestFor(const std::string& key) const {
  std::string out;
  if (cfg_.count == 1) {
    seqd::tools::AppendRespCommand(out, {"INCR", key});
  } else {
    seqd::tools::AppendRespCommand(out, {"INCRBY", key, std::to_string(cfg_.count)});
  }
  return out;
}

// The conversation of the next message: --messages CONV, spread over
// --convs conversations.
std::string BenchConnection::NextConv() const {
  if (cfg_.convs <= 1) return cfg_.messages;
  return cfg_.messages + "_" + std::to_string((index_ + appended_) % cfg_.convs);
}

// A SEND of a message stamped with `stamp` (for --subscribe), with a
// client_msg_id never used before.
void BenchConnection::AppendMessage(Clock::time_point stamp) {
  const std::string conv = NextConv();
  const std::string id =
      cfg_.run_id + "-" + std::to_string(index_) + "-" + std::to_string(appended_);
  const std::string payload = seqd::tools::StampedPayload(stamp, cfg_.payload);
  if (cfg_.http) {
    const std::string body = "{\"sender_id\":\"seqbench\",\"client_msg_id\":\"" + id +
                             "\",\"payload\":\"" + payload + "\"}";
    out_ += seqd::tools::BuildHttpRequest(
        "POST", "/conversations/" + seqd::tools::UrlEncode(conv) + "/messages", cfg_.endpoint, body,
        "application/json", cfg_.token);
    return;
  }
  seqd::proto::AppendRequest(out_, next_id_,
                             seqd::proto::SendReq{conv, "seqbench", id, 0, payload});
}

// The key of the next request: --key, or a fresh one with --new-keys.
const std::string& BenchConnection::NextKey() {
  if (cfg_.new_keys.empty()) return cfg_.key;
  fresh_key_ = cfg_.new_keys + std::to_string(index_) + "_" + std::to_string(++fresh_count_);
  return fresh_key_;
}

// Queues one request, its latency counted from `stamp`.
void BenchConnection::Append(Clock::time_point stamp) {
  ++appended_;
  if (cfg_.resp) {
    out_ += cfg_.new_keys.empty() ? http_request_ : RespRequestFor(NextKey());
    sent_order_.push_back(stamp);
  } else if (cfg_.http) {
    if (!cfg_.messages.empty()) {
      AppendMessage(stamp);
    } else {
      out_ += cfg_.new_keys.empty() ? http_request_ : HttpRequestFor(NextKey());
    }
    sent_order_.push_back(stamp);
  } else {
    if (++next_id_ == 0 || next_id_ == kAuthRequestId) next_id_ = 1;
    if (!cfg_.messages.empty()) {
      AppendMessage(stamp);
    } else if (cfg_.snowflake) {
      seqd::proto::AppendSnowflakeRequest(out_, next_id_, cfg_.count);
    } else {
      seqd::proto::AppendNextIdsRequest(out_, next_id_, NextKey(), cfg_.count);
    }
    sent_.emplace_back(next_id_, stamp);
  }
  ++in_flight_;
}

}  // namespace seqd::bench
