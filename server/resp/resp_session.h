// One RESP connection (resp_server.h says what it serves), and what the
// connections of one RespServer share. Private to server/resp.
//
// The session is one state machine, declared here and defined in two files
// by job:
//   resp_session.cc  the connection: TLS handshake, reading and parsing,
//                    coalesced non-blocking writes, lingering, timeouts;
//   resp_execute.cc  the commands: AUTH and access checks, INCR runs and
//                    INCRBY takes at the router, their replies and metrics.
// Replies wait in a RespReplyQueue (resp_reply_queue.h) for their turn.
//
// Flow: a read lands in `in_`; Parse() decodes every complete command and
// Execute()s it, which queues one slot per command (a reply, or pending on
// a Take); filled slots at the head of the queue move to `out_`, which
// DoWrite() sends without blocking (waiting for writability only when the
// socket buffer is full). Take callbacks capture a raw Session* and a slot
// number; `self_` keeps the session alive while any is outstanding.
//
// Thread safety: every member is touched only on the connection's strand,
// except OnTaken(), which any thread may call.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "server/auth/access.h"
#include "server/net/conn_stream.h"
#include "server/net/tcp_listener.h"
#include "server/resp/resp_commands.h"
#include "server/resp/resp_reply_queue.h"
#include "server/resp/resp_server.h"
#include "server/service/id_api.h"

namespace seqd {

class RequestMetrics;

struct RespServer::Impl {
  Impl(RespServerOptions options, const Services& services);

  const RespServerOptions options;
  IdApi& ids;
  RequestMetrics* const metrics;          // never null
  const Authenticator* const auth;        // null: open
  std::shared_ptr<TcpListener> listener;  // set once, by RespServer's constructor
};

class RespSession : public ListenedSession, public std::enable_shared_from_this<RespSession> {
 public:
  using Strand = TcpListener::Strand;
  using SteadyClock = std::chrono::steady_clock;

  RespSession(ConnStream&& stream, Strand strand, std::shared_ptr<RespServer::Impl> server);

  // Starts serving; with `reject`, answers an error and closes instead.
  // With TLS the handshake comes first; it must finish within the request
  // timeout, like a command.
  void Start(bool reject) override;

  // Server shutdown: close now if idle, else once the commands already read
  // are answered.
  void Stop() override;

 private:
  // --- the connection (resp_session.cc) --------------------------------------

  void DoHandshake(bool reject);
  void OnHandshake(bool reject, boost::system::error_code ec);
  // Moves the connection forward after any event: parse what was read,
  // write what is ready, then read more, finish or wait.
  void Pump();
  void DoRead();
  void OnRead(boost::system::error_code ec, size_t n);
  // Decodes and executes every complete command in the buffer, unless too
  // many are unanswered or the client is not reading its replies.
  void Parse();
  void Compact(bool force);
  // Writes as much output as the socket takes now, without blocking; waits
  // for writability only if the socket buffer is full.
  void DoWrite();
  void OnWritable(boost::system::error_code ec);
  // TLS: the output so far goes out in one async write.
  void DoWriteTls();
  void OnWriteTls(boost::system::error_code ec);
  // Everything answered and written; the connection ends.
  void Finish();
  void Linger();
  void Close();
  void ArmTimer(SteadyClock::time_point when);
  void OnTimer();
  SteadyClock::time_point NextCheck(SteadyClock::time_point now) const;

  bool OutEmpty() const { return out_sent_ == out_.size() && wbuf_.empty(); }
  size_t OutBacklog() const { return out_.size() - out_sent_ + wbuf_.size(); }

  // --- the commands (resp_execute.cc) ----------------------------------------

  // Acts on the command in args_.
  void Execute();
  // The input cannot be parsed: answered, and no more commands are read.
  void RejectProtocolError(std::string_view error);
  void Auth(const RespAction& a);
  // The access checks of a command that needs a token: true if it may go
  // on; else it is answered (NOAUTH, NOPERM; audited) and the INCR run
  // being collected is closed before that answer.
  bool Authenticated(RespOp op);
  bool Permitted(RespOp op, std::string_view key);  // INCR, INCRBY
  bool Allowed(RespOp op, std::string_view key);    // both
  void Incr(std::string_view key);
  // Ends the INCR run being collected: one Take for all of it.
  void CloseRun();
  void IncrBy(std::string_view key, int64_t n);
  void StartTake(std::string_view key, int64_t count, uint64_t seq);
  // GET, MGET, SEQD.MINSEQ, SEQD.SETMINSEQ: one slot, answered when the
  // router answers (Answered, on the strand).
  void Query(const RespAction& a);
  void Answered(uint64_t seq, RespOp op, std::optional<ErrorCode> code, std::string text);
  // Any thread.
  void OnTaken(uint64_t seq, Result<IdBatch> r);
  void Complete(uint64_t seq, Result<IdBatch> r);
  void Reply(RespOp op, std::optional<ErrorCode> code, std::string_view encoded);
  void Counted(RespOp op, std::optional<ErrorCode> code);
  void CountedTake(RespOp op, const RespSlot& head, int64_t n, std::optional<ErrorCode> code);

  ConnStream socket_;  // TCP, or TLS over it
  const Strand strand_;
  const std::shared_ptr<RespServer::Impl> server_;
  IdApi& ids_;
  const int64_t max_count_;
  RequestMetrics* const metrics_;    // never null
  boost::asio::steady_timer timer_;  // idle timeout, then linger deadline

  // Input: bytes [in_begin_, in_end_) are read but not yet parsed.
  std::unique_ptr<char[]> in_;  // allocated by the first read
  size_t in_cap_ = 0;
  size_t in_begin_ = 0, in_end_ = 0;
  bool partial_ = false;                     // a command has begun and is not whole yet
  SteadyClock::time_point partial_since_{};  // the read its first bytes came in
  SteadyClock::time_point write_wait_since_{};
  std::vector<std::string_view> args_;  // the command being executed
  bool need_more_ = true;               // Parse() stopped for lack of input

  // Replies in request order, unanswered or waiting for earlier ones.
  RespReplyQueue replies_;

  // The INCR run being collected by Parse().
  bool run_open_ = false;
  std::string_view run_key_;  // points into in_
  uint64_t run_seq_ = 0;
  int64_t run_count_ = 0;

  // Output: bytes [out_sent_, size) are not yet written.
  std::string out_;
  size_t out_sent_ = 0;
  std::string wbuf_;  // TLS: the output being written

  int outstanding_ = 0;                // Take calls not yet completed
  std::shared_ptr<RespSession> self_;  // set while outstanding_ > 0

  SteadyClock::time_point last_activity_{};
  SteadyClock::time_point read_at_{};  // of the last read: the commands' start
  SteadyClock::time_point linger_deadline_{};
  size_t discarded_ = 0;
  bool read_waiting_ = false;   // an async_read_some is in flight
  bool write_waiting_ = false;  // waiting for the socket to take more output
  bool read_closed_ = false;    // no more commands: EOF, QUIT, protocol error, rejected
  bool peer_eof_ = false;       // the client shut down its sending side
  Access access_;               // the connection's token; replaced by each AUTH
  int failed_auths_ = 0;
  bool stopping_ = false;  // server shutdown
  bool lingering_ = false;
  bool closed_ = false;
};

}  // namespace seqd
