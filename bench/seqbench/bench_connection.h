// One seqbench load connection: keeps --pipeline requests in flight (closed
// loop) or sends them on a fixed schedule (--rate, open loop: BenchPacer
// says when), over the
// binary protocol (raw codec, matched by request id), HTTP/1.1 or RESP2
// (both pipelined, answered in order), plain or TLS; reconnects 100 ms after
// a failure.
//   bench_connection.cc  connecting, the send loops, reading and writing
//   bench_requests.cc    what each request asks: a key's IDs (--key,
//                        --new-keys; INCR with --resp), snowflake IDs, or a
//                        message (--messages)
//   bench_responses.cc   matching answers to requests, latency and counts
//
// Thread safety: Start and Stop from any thread; everything else runs on the
// connection's strand. stats() only once the io_context stopped running.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74 misses it under GCC 12
#include <vector>

#include "proto/binary_codec.h"
#include "read_buffer.h"
#include "seqbench.h"

namespace seqd::bench {

// The request id of the AUTH frame each binary connection starts with (no
// NEXT_IDS request uses it).
constexpr uint32_t kAuthRequestId = 0xFFFFFFFFu;

class BenchConnection : public std::enable_shared_from_this<BenchConnection> {
 public:
  using tcp = boost::asio::ip::tcp;

  // `cfg` and `stop` outlive the connection; `tls_context` is null without TLS.
  BenchConnection(boost::asio::io_context& io, const Config& cfg,
                  tcp::resolver::results_type endpoints, const std::atomic<bool>& stop,
                  std::shared_ptr<boost::asio::ssl::context> tls_context);

  // Numbers the connections, so --new-keys keys never repeat across them.
  // `quota`: requests this connection sends in all (-1: no limit).
  void SetIndex(int index, int64_t quota) {
    index_ = index;
    quota_ = quota;
  }

  void Start();
  void Stop();
  // --rate: sends, on the connection's strand, every request scheduled at or
  // before `now` (BenchPacer's tick).
  void Due(Clock::time_point now);
  const Stats& stats() const { return stats_; }

 private:
  // bench_connection.cc
  void Connect();
  void Handshake();
  void Started();
  void SendDue(Clock::time_point now);
  void Fail(const std::string& what);
  void Fill();
  void Write();
  void Read();

  // bench_requests.cc
  std::string HttpRequestFor(const std::string& key) const;
  std::string RespRequestFor(const std::string& key) const;
  std::string NextConv() const;
  void AppendMessage(Clock::time_point stamp);
  const std::string& NextKey();
  void Append(Clock::time_point stamp);
  bool QuotaSent() const { return quota_ >= 0 && appended_ >= quota_; }

  // bench_responses.cc
  void Record(Clock::time_point sent);  // answered at read_at_
  bool ParseBinary();
  void CountIds(std::string_view result);
  bool ParseHttp();
  bool ParseResp();
  void RespError(std::string_view text);

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  tcp::socket socket_;
  std::shared_ptr<boost::asio::ssl::context> tls_context_;       // --tls only
  std::shared_ptr<boost::asio::ssl::stream<tcp::socket&>> tls_;  // this connection's, over socket_
  boost::asio::steady_timer retry_timer_;
  bool pacing_ = false;              // --rate: next_due_ is set
  Clock::time_point next_due_{};     // --rate: the next request's scheduled time
  Clock::duration pace_interval_{};  // --rate: between this connection's requests
  const Config& cfg_;
  tcp::resolver::results_type endpoints_;
  const std::atomic<bool>& stop_;
  std::string http_request_;        // --key's request over HTTP or RESP, made once
  bool resp_auth_pending_ = false;  // --resp --token: AUTH's reply not read yet
  std::string out_, wbuf_;
  bool writing_ = false;
  bool connected_ = false;
  seqd::tools::ReadBuffer in_;
  Clock::time_point read_at_{};  // when the answers being parsed were read
  int in_flight_ = 0;
  uint32_t next_id_ = 0;
  int index_ = 0;
  int64_t quota_ = -1;    // requests to send in all; -1: no limit
  int64_t appended_ = 0;  // requests queued so far (resent ones not counted again)
  uint64_t fresh_count_ = 0;
  std::string fresh_key_;
  uint64_t generation_ = 0;
  // Binary requests not answered yet, in the order sent: answers mostly
  // come in that order, so matching one is a look at the front, and a
  // request costs no allocation (as sent_order_ for HTTP and RESP).
  std::deque<std::pair<uint32_t, Clock::time_point>> sent_;
  std::deque<Clock::time_point> sent_order_;
  std::vector<seqd::proto::IdRangeWire> ranges_;  // CountIds's, kept for its capacity
  Stats stats_;
};

}  // namespace seqd::bench
