#include "server/tcp/binary_server.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "server/core/log.h"
#include "server/core/segment_allocator.h"

namespace seqd {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using Strand = net::strand<net::io_context::executor_type>;
using Socket = net::basic_stream_socket<tcp, Strand>;
using Timer = net::basic_waitable_timer<std::chrono::steady_clock,
                                        net::wait_traits<std::chrono::steady_clock>, Strand>;
using SteadyClock = std::chrono::steady_clock;

namespace {

class Session;

constexpr size_t kInitialReadBuffer = 16 * 1024;
constexpr size_t kMinReadSpace = 4 * 1024;       // free room asked of each read
constexpr size_t kKeepBufferBytes = 256 * 1024;  // larger idle buffers are freed
constexpr std::chrono::seconds kLingerTime{2};   // after a protocol error frame
constexpr size_t kLingerBytes = 1 << 20;         // discarded at most while lingering
constexpr size_t kInlineRanges = 4;              // ranges converted without allocating

// The one mapping from core errors to wire statuses. Internal messages are
// never shown to clients.
struct WireError {
  proto::Status status;
  std::string_view message;
};

WireError ToWire(const Error& e) {
  switch (e.code) {
    case ErrorCode::kInvalidArgument:
      return {proto::Status::kInvalidArgument, e.message};
    case ErrorCode::kUnknownKey:
      return {proto::Status::kUnknownKey, e.message};
    case ErrorCode::kKeyExists:
      return {proto::Status::kKeyExists, e.message};
    case ErrorCode::kStoreUnavailable:
      return {proto::Status::kStoreUnavailable, e.message};
    case ErrorCode::kShuttingDown:
      return {proto::Status::kShuttingDown, e.message};
    case ErrorCode::kInternal:
      break;
  }
  return {proto::Status::kInternal, "internal error"};
}

}  // namespace

struct BinaryServer::Impl : std::enable_shared_from_this<BinaryServer::Impl> {
  Impl(net::io_context& io_, BinaryServerOptions options_, SegmentAllocator& allocator_)
      : io(io_),
        options(std::move(options_)),
        allocator(allocator_),
        strand(net::make_strand(io_)),
        acceptor(strand),
        retry_timer(strand) {}

  Status Listen();
  void DoAccept();
  void OnAccept(error_code ec, Socket socket);
  // Starts a session on a connected socket (or closes it when full/stopping).
  void Adopt(Socket socket);
  void CloseAcceptor();
  void Unregister(Session* session);

  net::io_context& io;
  const BinaryServerOptions options;
  SegmentAllocator& allocator;
  Strand strand;  // serializes acceptor + retry_timer
  net::basic_socket_acceptor<tcp, Strand> acceptor;
  Timer retry_timer;  // backs off after accept errors (e.g. EMFILE)
  std::atomic<uint16_t> port{0};

  mutable std::mutex mu;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;  // guarded by mu
  bool stopping = false;                                          // guarded by mu
  std::function<void()> drained;                                  // guarded by mu
};

namespace {

// One connection. Every member is touched only on the connection's strand,
// except strand_ and allocator_ (immutable).
//
// Accounting: a request is "unanswered" from the moment it is decoded until
// its response has been written: pending_ (at the allocator), then queued_
// (in out_), then writing_count_ (in wbuf_, being written). Their sum is
// capped at max_in_flight, which also bounds the output buffers.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, std::shared_ptr<BinaryServer::Impl> server)
      : socket_(std::move(socket)),
        strand_(socket_.get_executor()),
        timer_(strand_),
        server_(std::move(server)),
        allocator_(server_->allocator),
        max_in_flight_(std::max<size_t>(1, server_->options.max_in_flight)),
        max_frame_(std::min(server_->options.max_frame_bytes, proto::kMaxFrameSize)),
        idle_(server_->options.idle_timeout) {}

  ~Session() { server_->Unregister(this); }

  void Start() {
    net::dispatch(strand_, [self = shared_from_this()] {
      self->last_activity_ = SteadyClock::now();
      if (self->idle_.count() > 0) self->ArmTimer(self->last_activity_ + self->idle_);
      self->StartRead();
    });
  }

  // Server shutdown: close now if nothing is in flight, else once the
  // requests in flight are answered. Nothing more is read.
  void Stop() {
    net::post(strand_, [self = shared_from_this()] {
      self->stopping_ = true;
      self->MaybeFinish();
    });
  }

 private:
  size_t unanswered() const { return pending_ + queued_ + writing_count_; }

  // --- reading -------------------------------------------------------------

  void StartRead() {
    if (reading_ || closed_ || closing_ || stopping_ || read_eof_) return;
    if (unanswered() >= max_in_flight_) return;  // backpressure: resumed by OnWrite
    const size_t have = in_end_ - in_begin_;
    size_t need = kMinReadSpace;
    if (have >= 4) {  // room for the whole partial frame (its length is valid)
      const auto* p = reinterpret_cast<const unsigned char*>(in_.data() + in_begin_);
      const size_t frame =
          4 + ((size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | size_t{p[3]});
      if (frame > have) need = std::max(need, std::min(frame, max_frame_) - have);
    }
    if (in_.size() - in_end_ < need) {
      if (in_begin_ > 0) {
        std::memmove(in_.data(), in_.data() + in_begin_, have);
        in_begin_ = 0;
        in_end_ = have;
      }
      if (in_.size() - in_end_ < need) {
        in_.resize(std::max({in_end_ + need, in_.size() * 2, kInitialReadBuffer}));
      }
    }
    reading_ = true;
    socket_.async_read_some(
        net::buffer(in_.data() + in_end_, in_.size() - in_end_),
        [self = shared_from_this()](error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(error_code ec, size_t n) {
    reading_ = false;
    if (closed_) return;
    if (lingering_) {
      discarded_ += n;
      if (ec || discarded_ > kLingerBytes) return Close();
      return DoDiscard();
    }
    if (ec) {
      if (ec == net::error::eof) {  // the client is done sending: answer, then close
        read_eof_ = true;
        return MaybeFinish();
      }
      return Close();  // reset, aborted, ...
    }
    in_end_ += n;
    last_activity_ = SteadyClock::now();
    if (stopping_ || closing_) return;  // draining: new requests are not served
    ProcessInput();
  }

  // Handles every complete frame in the input buffer (up to the in-flight
  // cap), then writes what was answered and reads on. REQUIRES: the caller
  // holds a reference to the session.
  void ProcessInput() {
    if (closed_ || closing_ || stopping_) return;
    in_batch_ = true;
    while (in_begin_ < in_end_ && unanswered() < max_in_flight_) {
      const std::string_view input(in_.data() + in_begin_, in_end_ - in_begin_);
      const proto::DecodeResult r = proto::DecodeFrame(input, max_frame_);
      if (r.state == proto::DecodeState::kNeedMore) break;
      if (r.state == proto::DecodeState::kError) {
        ProtocolError(r.error, proto::DescribeDecodeError(input, max_frame_));
        break;
      }
      // The frame stays valid: nothing reuses the buffer until the loop ends.
      in_begin_ += r.consumed;
      HandleFrame(r.frame);
      if (closing_ || stopping_) break;
    }
    in_batch_ = false;
    if (pending_ == 0) self_keep_.reset();  // safe: our caller holds a reference
    if (in_begin_ == in_end_ && !reading_) {
      in_begin_ = in_end_ = 0;
      if (in_.size() > kKeepBufferBytes) std::vector<char>().swap(in_);
    }
    Flush();
    StartRead();
  }

  // --- requests ------------------------------------------------------------

  void HandleFrame(const proto::FrameView& f) {
    if (f.is_response()) {
      return ProtocolError(proto::Status::kMalformedFrame,
                           "malformed frame: RESPONSE flag set on a request");
    }
    switch (static_cast<proto::Opcode>(f.opcode)) {
      case proto::Opcode::kPing:
        if (f.payload.size() > proto::kMaxPingPayload) {
          proto::AppendError(out_, proto::Opcode::kPing, f.request_id,
                             proto::Status::kInvalidArgument,
                             "PING payload must be at most 1024 bytes");
        } else {
          proto::AppendOkPing(out_, f.request_id, f.payload);
        }
        ++queued_;
        return;
      case proto::Opcode::kNextIds:
        return HandleNextIds(f);
      default:
        break;
    }
    char message[32];
    std::snprintf(message, sizeof(message), "unknown opcode 0x%02x", unsigned{f.opcode});
    proto::AppendError(out_, static_cast<proto::Opcode>(f.opcode), f.request_id,
                       proto::Status::kUnknownOpcode, message);
    ++queued_;
  }

  void HandleNextIds(const proto::FrameView& f) {
    const std::optional<proto::NextIdsRequest> req = proto::ParseNextIdsRequest(f.payload);
    if (!req) {
      proto::AppendError(out_, proto::Opcode::kNextIds, f.request_id,
                         proto::Status::kInvalidArgument,
                         "NEXT_IDS payload must be u16 key_length, key, u32 count");
      ++queued_;
      return;
    }
    const int64_t max_count = allocator_.options().max_count;
    if (req->count < 1 || static_cast<int64_t>(req->count) > max_count) {
      proto::AppendError(out_, proto::Opcode::kNextIds, f.request_id,
                         proto::Status::kInvalidArgument,
                         "count must be an integer in [1, " + std::to_string(max_count) + "]");
      ++queued_;
      return;
    }
    // The session outlives every request in flight (see OnTakeDone).
    if (pending_++ == 0 && !self_keep_) self_keep_ = shared_from_this();
    // Small and trivially copyable: std::function stores it without allocating.
    auto done = [session = this, id = f.request_id](Result<IdBatch> r) {
      session->OnTakeResult(id, std::move(r));
    };
    static_assert(sizeof(done) <= 16 && std::is_trivially_copyable_v<decltype(done)>);
    allocator_.Take(req->key, req->count, done);  // the key is not kept past the call
  }

  // Any thread. Inline when already on the strand (the allocator's fast path).
  void OnTakeResult(uint32_t id, Result<IdBatch> r) {
    net::dispatch(strand_,
                  [this, id, r = std::move(r)]() mutable { OnTakeDone(id, std::move(r)); });
  }

  void OnTakeDone(uint32_t id, Result<IdBatch> r) {
    // Inside a batch the caller holds a reference and releases self_keep_
    // once at the end (saves a pair of atomic operations per request).
    // Otherwise this may be the last reference: released on return.
    std::shared_ptr<Session> keep;
    if (--pending_ == 0 && !in_batch_) keep = std::move(self_keep_);
    if (closed_ || closing_) return;  // nobody to answer, or after the error frame
    if (r.ok()) {
      const auto& ranges = r->ranges;
      if (ranges.size() <= kInlineRanges) {
        proto::IdRangeWire wire[kInlineRanges];
        for (size_t i = 0; i < ranges.size(); ++i) wire[i] = {ranges[i].first, ranges[i].last};
        proto::AppendOkNextIds(out_, id, wire, ranges.size());
      } else {
        std::vector<proto::IdRangeWire> wire;
        wire.reserve(ranges.size());
        for (const IdRange& range : ranges) wire.push_back({range.first, range.last});
        proto::AppendOkNextIds(out_, id, wire.data(), wire.size());
      }
    } else {
      const WireError w = ToWire(r.error());
      proto::AppendError(out_, proto::Opcode::kNextIds, id, w.status, w.message);
      if (w.status == proto::Status::kShuttingDown) stopping_ = true;  // closed after it
    }
    ++queued_;
    if (!in_batch_) Flush();  // in a batch, ProcessInput flushes once at the end
  }

  // Sends one error frame, then closes (after lingering).
  void ProtocolError(proto::Status status, std::string_view message) {
    SEQD_LOG(kDebug) << "binary: closing connection: " << proto::StatusName(status) << ": "
                     << message;
    closing_ = true;
    proto::AppendProtocolError(out_, status, message);
  }

  // --- writing -------------------------------------------------------------

  void Flush() {
    if (writing_ || out_.empty() || closed_) return;
    writing_ = true;
    out_.swap(wbuf_);  // wbuf_ was empty: out_ keeps its capacity for next time
    writing_count_ = queued_;
    queued_ = 0;
    net::async_write(socket_, net::buffer(wbuf_),
                     [self = shared_from_this()](error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(error_code ec) {
    writing_ = false;
    writing_count_ = 0;
    if (wbuf_.capacity() > kKeepBufferBytes) {
      std::string().swap(wbuf_);
    } else {
      wbuf_.clear();
    }
    if (closed_) return;
    if (ec) return Close();
    last_activity_ = SteadyClock::now();
    Flush();  // whatever accumulated meanwhile
    if (closing_) {
      if (!writing_) Linger();  // the error frame is out
      return;
    }
    if (stopping_ || read_eof_) return MaybeFinish();
    if (!reading_) ProcessInput();  // below the cap again: handle buffered frames, read on
  }

  // --- closing -------------------------------------------------------------

  // Closes once nothing is unanswered (draining or after the client's EOF).
  void MaybeFinish() {
    if (!closed_ && unanswered() == 0) Close();
  }

  // Half-closes, then discards what the client still sends until it closes,
  // the linger time passes or too much arrives. Closing with unread input
  // would reset the connection and could destroy the error frame.
  void Linger() {
    lingering_ = true;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    const auto linger = idle_.count() > 0 ? std::min<SteadyClock::duration>(kLingerTime, idle_)
                                          : SteadyClock::duration(kLingerTime);
    ArmTimer(SteadyClock::now() + linger);
    if (!reading_) DoDiscard();
  }

  void DoDiscard() {
    if (in_.size() < kMinReadSpace) in_.resize(kMinReadSpace);
    reading_ = true;
    socket_.async_read_some(
        net::buffer(in_.data(), in_.size()),
        [self = shared_from_this()](error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    socket_.close(ignored);  // aborts the read and write in flight
    timer_.cancel();
    out_.clear();
    queued_ = 0;
    // Requests still at the allocator keep the session (self_keep_) until
    // they complete; their answers are dropped.
  }

  // --- idle timeout --------------------------------------------------------

  void ArmTimer(SteadyClock::time_point when) {
    timer_.expires_at(when);
    timer_.async_wait([self = shared_from_this()](error_code ec) { self->OnTimer(ec); });
  }

  // Checks the last activity instead of re-arming on every request.
  void OnTimer(error_code ec) {
    if (ec || closed_) return;  // cancelled or re-armed
    if (lingering_) return Close();
    const auto now = SteadyClock::now();
    if (unanswered() > 0) return ArmTimer(now + idle_);  // busy: not idle
    if (now - last_activity_ >= idle_) {
      SEQD_LOG(kDebug) << "binary: closing idle connection";
      return Close();
    }
    ArmTimer(last_activity_ + idle_);
  }

  Socket socket_;
  const Strand strand_;
  Timer timer_;
  std::shared_ptr<BinaryServer::Impl> server_;
  SegmentAllocator& allocator_;
  const size_t max_in_flight_;
  const size_t max_frame_;
  const std::chrono::seconds idle_;

  std::vector<char> in_;  // received bytes; [in_begin_, in_end_) not yet handled
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  std::string out_;   // responses waiting for the next write
  std::string wbuf_;  // responses being written
  size_t pending_ = 0;
  size_t queued_ = 0;
  size_t writing_count_ = 0;
  std::shared_ptr<Session> self_keep_;  // set while pending_ > 0
  SteadyClock::time_point last_activity_{};
  size_t discarded_ = 0;

  bool reading_ = false;    // an async_read_some is in flight
  bool writing_ = false;    // an async_write is in flight
  bool in_batch_ = false;   // inside ProcessInput's loop: defer Flush
  bool read_eof_ = false;   // the client shut down its side
  bool stopping_ = false;   // draining: answer what is in flight, then close
  bool closing_ = false;    // protocol error: error frame queued, then close
  bool lingering_ = false;  // error frame written; discarding input until close
  bool closed_ = false;
};

}  // namespace

Status BinaryServer::Impl::Listen() {
  const std::string where = options.address + ":" + std::to_string(options.port);
  error_code ec;
  const net::ip::address addr = net::ip::make_address(options.address, ec);
  if (ec) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "invalid listen address '" + options.address + "': " + ec.message());
  }
  const tcp::endpoint endpoint(addr, options.port);
  auto fail = [&](std::string_view what) -> Status {
    error_code ignored;
    acceptor.close(ignored);
    return MakeError(ErrorCode::kInvalidArgument,
                     "cannot " + std::string(what) + " " + where + ": " + ec.message());
  };
  if (acceptor.open(endpoint.protocol(), ec); ec) return fail("open socket for");
  if (acceptor.set_option(net::socket_base::reuse_address(true), ec); ec) {
    return fail("set SO_REUSEADDR on");
  }
  if (acceptor.bind(endpoint, ec); ec) return fail("bind");
  if (acceptor.listen(net::socket_base::max_listen_connections, ec); ec) return fail("listen on");
  const tcp::endpoint local = acceptor.local_endpoint(ec);
  if (ec) return fail("read the bound address of");
  port = local.port();
  net::post(strand, [self = shared_from_this()] { self->DoAccept(); });
  return OkStatus();
}

void BinaryServer::Impl::DoAccept() {
  if (!acceptor.is_open()) return;
  acceptor.async_accept(net::make_strand(io),
                        [self = shared_from_this()](error_code ec, Socket socket) {
                          self->OnAccept(ec, std::move(socket));
                        });
}

void BinaryServer::Impl::OnAccept(error_code ec, Socket socket) {
  if (ec) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    SEQD_LOG(kWarn) << "binary: accept failed: " << ec.message();
    retry_timer.expires_after(std::chrono::milliseconds(100));
    retry_timer.async_wait([self = shared_from_this()](error_code timer_ec) {
      if (!timer_ec) self->DoAccept();
    });
    return;
  }
  Adopt(std::move(socket));
  DoAccept();
}

void BinaryServer::Impl::Adopt(Socket socket) {
  error_code ignored;
  // Responses are coalesced by the session; Nagle would only delay them.
  socket.set_option(tcp::no_delay(true), ignored);
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(mu);
    if (stopping) return;  // the socket closes here
    if (sessions.size() < options.max_connections) {
      session = std::make_shared<Session>(std::move(socket), shared_from_this());
      sessions.emplace(session.get(), session);
    }
  }
  if (session) {
    session->Start();
  } else {
    SEQD_LOG(kDebug) << "binary: too many connections; closing a new one";
    socket.close(ignored);
  }
}

void BinaryServer::Impl::CloseAcceptor() {
  net::post(strand, [self = shared_from_this()] {
    error_code ignored;
    self->acceptor.close(ignored);
    self->retry_timer.cancel();
  });
}

void BinaryServer::Impl::Unregister(Session* session) {
  std::function<void()> done;
  {
    std::lock_guard lock(mu);
    if (sessions.erase(session) == 0 || !stopping || !sessions.empty() || !drained) return;
    done = std::move(drained);
    drained = nullptr;
  }
  net::post(io, std::move(done));  // not from inside the session's destructor
}

BinaryServer::BinaryServer(net::io_context& io, BinaryServerOptions options,
                           SegmentAllocator& allocator)
    : impl_(std::make_shared<Impl>(io, std::move(options), allocator)) {}

BinaryServer::~BinaryServer() { impl_->CloseAcceptor(); }

Status BinaryServer::Listen() { return impl_->Listen(); }

uint16_t BinaryServer::port() const { return impl_->port; }

Status BinaryServer::Serve(int fd) {
  Socket socket(net::make_strand(impl_->io));
  error_code ec;
  socket.assign(tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return MakeError(ErrorCode::kInvalidArgument, "cannot serve socket: " + ec.message());
  }
  impl_->Adopt(std::move(socket));
  return OkStatus();
}

size_t BinaryServer::open_connections() const {
  std::lock_guard lock(impl_->mu);
  return impl_->sessions.size();
}

void BinaryServer::Stop(std::function<void()> drained) {
  std::vector<std::shared_ptr<Session>> live;
  std::function<void()> done;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    if (drained) {
      if (impl_->drained) {  // a second Stop(): run both callbacks
        impl_->drained = [first = std::move(impl_->drained), second = std::move(drained)] {
          first();
          second();
        };
      } else {
        impl_->drained = std::move(drained);
      }
    }
    for (auto& [ptr, weak] : impl_->sessions) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
    if (impl_->sessions.empty() && impl_->drained) {
      done = std::move(impl_->drained);
      impl_->drained = nullptr;
    }
  }
  impl_->CloseAcceptor();
  for (auto& s : live) s->Stop();
  live.clear();  // a session may now die here; Unregister takes the lock itself
  if (done) net::post(impl_->io, std::move(done));
}

}  // namespace seqd
