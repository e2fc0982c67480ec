// One HTTP/1.1 connection (as Beast's advanced server example): the TLS
// handshake, reading one request at a time (parser, limits, header checks),
// ApiRouter, writing the answer, keep-alive, the deadline, lingering after
// a final answer (bytes, checks: http_exchange.h). An answer that is an
// event stream hands the connection to an SseSession (sse_session.h).
// One class template over three streams whose flags every handler shares;
// Beast's templates compile here only.
#include "server/http/http_session.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <optional>
#include <type_traits>

#include "server/base/log.h"
#include "server/http/api_router.h"
#include "server/http/http_deadline.h"
#include "server/http/http_exchange.h"
#include "server/http/http_ops.h"
#include "server/http/http_request.h"
#include "server/http/http_responder.h"
#include "server/http/http_sockets.h"
#include "server/http/request_ids.h"
#include "server/http/request_parser.h"
#include "server/http/sse_session.h"
#include "server/http/stream/event_sink.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"
#include "server/service/wire_errors.h"

namespace seqd {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {

using Response = HttpResponse;

// How much a connection we are closing may send while it lingers
// (kHttpLingerTime) before we drop it.
constexpr size_t kLingerBytes = 1 << 20;
// A connection's response buffer keeps at most this much room between answers.
constexpr size_t kKeptResponseBytes = 64 * 1024;
// The most one read asks for (as Beast's reads).
constexpr size_t kReadChunkBytes = 65536;

using Socket = TcpListener::Socket;  // bound to the connection's strand
using TlsStream = beast::ssl_stream<Socket>;
using IoSocket = HttpIoSocket;
using Clock = std::chrono::steady_clock;

// One connection over `Stream`: the strand-bound socket, IoSocket, or
// TlsStream. Every member is touched only on the connection's strand.
// Deadlines (HttpDeadline): a request must arrive whole within the idle
// timeout; an answer must be written whole within the write timeout (from
// the write's start: a long-poll's wait does not count); the router's work
// has none of its own.
template <typename Stream>
class Session : public ListenedSession,
                public HttpResponder,
                public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  using Lowest =
      std::remove_reference_t<decltype(beast::get_lowest_layer(std::declval<Stream&>()))>;
  using Executor = typename Lowest::executor_type;  // a strand, or the io_context's
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;
  using std::enable_shared_from_this<Session<Stream>>::weak_from_this;

 public:
  // `tls`: the context of a TLS stream (kept alive with it); null for TCP.
  Session(Lowest&& socket, std::shared_ptr<net::ssl::context> tls,
          std::shared_ptr<HttpServer::Impl> server)
      : tls_(std::move(tls)),
        stream_(MakeStream(std::move(socket), tls_.get())),
        ex_(Tcp().get_executor()),
        deadline_(ex_),
        server_(std::move(server)),
        unread_(server_->unread) {
    error_code ec;
    const tcp::endpoint remote = Tcp().remote_endpoint(ec);
    if (!ec) unread_.set_peer(remote.address().to_string());
    if (!ec) peer_ = remote.address().to_string() + ":" + std::to_string(remote.port());
    // Plain TCP answers are first written directly (DoWrite): that write
    // must not block the thread.
    if constexpr (!kTls) Tcp().non_blocking(true, ec);
  }

  // Starts serving (after the TLS handshake, which must finish within the
  // idle timeout); with `reject`, answers 503 and closes instead.
  void Start(bool reject) override {
    net::dispatch(ex_, [self = shared_from_this(), reject] {
      if constexpr (kTls) {
        self->DoHandshake(reject);
      } else {
        self->Begin(reject);
      }
    });
  }

  // Server shutdown: close now if idle, else after the response in flight.
  // Once the connection is handed to an SseSession, that session stops it.
  void Stop() override {
    net::post(ex_, [self = shared_from_this()] {
      if (self->handed_over_) return;
      self->stopping_ = true;
      if (!self->busy_) return self->Close();
    });
  }

 private:
  static Stream MakeStream(Lowest&& socket, net::ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls);
    } else {
      (void)tls;
      return Stream(std::move(socket));
    }
  }

  Lowest& Tcp() { return beast::get_lowest_layer(stream_); }

  // Closes the socket: pending reads and writes end with an error.
  void Close() {
    error_code ignored;
    Tcp().close(ignored);
    deadline_.Cancel();
  }

  // --- deadline (http_deadline.h) -------------------------------------------

  // The connection is closed if the operation under way has not finished
  // by now + `d`; an answer's write is bounded by the write timeout.
  void ExpiresAfter(Clock::duration d) { deadline_.After(d, HttpDeadlineFor::kOther, weak()); }
  void WriteExpiresAfter(Clock::duration d) { deadline_.After(d, HttpDeadlineFor::kWrite, weak()); }
  void WriteExpires() { WriteExpiresAfter(server_->options.write_timeout); }
  void ExpiresNever() { deadline_.Never(); }
  std::weak_ptr<Session<Stream>> weak() { return weak_from_this(); }

 public:
  // Called by deadline_: close, failing what is under way (as a timed-out
  // stream would); a write not taken in time is counted and reset.
  void OnDeadline(HttpDeadlineFor what) {
    if (what == HttpDeadlineFor::kWrite) HttpWriteTimedOut(*server_, peer_, Tcp().native_handle());
    error_code ignored;
    Tcp().close(ignored);
  }

 private:
  // --- reading a request -----------------------------------------------------

  void DoHandshake(bool reject) {
    ExpiresAfter(server_->options.idle_timeout);
    stream_.async_handshake(
        net::ssl::stream_base::server,
        beast::bind_front_handler(&Session<Stream>::OnHandshake, shared_from_this(), reject));
  }

  void OnHandshake(bool reject, error_code ec) {
    if (ec) {
      SEQD_LOG(kDebug) << "http: TLS handshake failed: " << ec.message();
      return Close();
    }
    Begin(reject);
  }

  void Begin(bool reject) {
    if (reject) {
      Count(ProtocolErrorFor(ProtocolError::kTooManyConnections).metric_label);
      SendAndClose(CloseWithError(http::status::service_unavailable, "service_unavailable",
                                  "too many connections"));
    } else {
      DoRead();
    }
  }

  // Starts reading the next request: from what the buffer holds already
  // (pipelined), then from the socket.
  void DoRead() {
    if (stopping_) return Close();
    parser_.emplace(request_, header_fields_);
    parser_->header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(server_->options.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(static_cast<std::uint64_t>(server_->options.max_body_bytes));
    header_checked_ = false;
    // An absolute deadline for the whole request: trickling does not extend it.
    ExpiresAfter(server_->options.idle_timeout);
    Parse();
  }

  // Feeds the buffer to the parser as Beast's read operations do: the
  // header first, then (eagerly) the body. Reads more while the request is
  // incomplete; refuses a bad header before its body is read.
  void Parse() {
    while (buffer_.size() > 0) {
      error_code ec;
      // A header is parsed whole in one put(): the bytes it used (valid
      // until the next prepare()).
      const auto* at = static_cast<const char*>(buffer_.data().data());
      const size_t used = parser_->put(buffer_.data(), ec);
      const std::string_view header_bytes(at, used);
      buffer_.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) return OnReadError(ec);
      if (!header_checked_ && parser_->is_header_done()) {
        header_checked_ = true;
        if (auto refusal = RefuseHeader(*parser_, request_, header_bytes)) {
          Count(ProtocolErrorFor(ProtocolError::kBadRequest).metric_label);
          return SendAndClose(std::move(*refusal));
        }
        // No valid token for a route that needs one and a body still to
        // come: answered now, body unread (no 100 Continue), then closed.
        const auto length = parser_->content_length();
        if (!parser_->is_done() && (!length || *length > buffer_.size())) {
          if (auto refusal = server_->router.RefuseBeforeBody(request_, peer_)) {
            return SendAndClose(std::move(*refusal));
          }
        }
        parser_->eager(true);  // as http::async_read reads a body
        // A client that asked to wait sends its body once told to go on.
        if (parser_->expect_continue() && !parser_->is_done() && request_.version == 11) {
          return DoContinue();
        }
      }
      if (parser_->is_done()) return OnRequest();
      if (used == 0) break;  // no progress without more input
    }
    DoReadSome();
  }

  // The interim "100 Continue", then on with the request (what the buffer
  // holds already, then the socket). No answer is being written: one
  // request is read at a time.
  void DoContinue() {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                     beast::bind_front_handler(&Session<Stream>::OnContinue, shared_from_this()));
  }

  void OnContinue(error_code ec, size_t /*bytes*/) {
    if (ec) return;
    Parse();
  }

  void DoReadSome() {
    // Room as Beast's read_size(buffer, 65536) gives it.
    const size_t room =
        std::clamp<size_t>(buffer_.capacity() - buffer_.size(), 512, kReadChunkBytes);
    stream_.async_read_some(
        buffer_.prepare(room),
        beast::bind_front_handler(&Session<Stream>::OnReadSome, shared_from_this()));
  }

  void OnReadSome(error_code ec, size_t bytes) {
    buffer_.commit(bytes);
    if (ec == net::error::eof) {
      // As Beast's read: a request cut short is a partial message; a clean
      // close between requests is the end of the stream.
      if (!parser_->got_some()) return OnReadError(http::error::end_of_stream);
      ec = {};
      parser_->put_eof(ec);
      if (ec) return OnReadError(ec);
      return Parse();
    }
    if (ec) return OnReadError(ec);
    Parse();
  }

  // A request that cannot be served: the limits and malformed input get
  // their answer and close; anything else just ends the connection.
  void OnReadError(error_code ec) {
    if (ec == http::error::end_of_stream) return ShutdownSend();  // client is done
    if (std::optional<ReadErrorAnswer> answer = AnswerToReadError(ec)) {
      Count(answer->metric_label);
      return SendAndClose(std::move(answer->response));
    }
  }

  // An answer the connection gives itself, counted as the router would.
  void Count(std::string_view status) {
    server_->router.services().metrics.CountRequest(Interface::kHttp,
                                                    HttpOpFor(HttpOp::kOther).metric_label, status);
  }

  // --- answering -------------------------------------------------------------

  // A complete request is in request_: hand it to the router.
  void OnRequest() {
    if (stopping_) return Close();
    if (unread_.Over()) {  // its address does not read what it asked for
      Count(ProtocolErrorFor(ProtocolError::kTooMuchUnread).metric_label);
      return SendAndClose(TooMuchUnread());
    }
    busy_ = true;
    head_ = request_.method == http::verb::head;
    ExpiresNever();  // the router answers within the allocator's deadline
    // The request's strings move to the router; the next parse grows new ones.
    server_->router.Handle(std::move(request_), peer_, shared_from_this());
  }

  // HttpResponder. May run on any thread: hop onto the strand before
  // touching the stream. On the fast path we are still on it.
  void Respond(Response res) override {
    if (ex_.running_in_this_thread()) return OnResponse(std::move(res));
    net::post(ex_, [self = shared_from_this(), res = std::move(res)]() mutable {
      self->OnResponse(std::move(res));
    });
  }

  void RespondOk(const OkAnswer& answer) override {
    // Off the strand the views would not outlive the hop: build the message.
    if (!ex_.running_in_this_thread()) return Respond(ToResponse(answer));
    // For an HTTP/1.1 keep-alive answer Beast's message has no Connection
    // field: format its bytes directly. Anything else goes the general way.
    if (answer.version != 11 || !answer.keep_alive || stopping_) {
      return OnResponse(ToResponse(answer));
    }
    out_.clear();
    AppendOkHeader(answer.content_type, answer.body.size(), answer.request_id,
                   answer.placement_version, out_);
    if (!head_) out_.append(answer.body.data(), answer.body.size());
    DoWrite(/*close=*/false);
  }

  void OnResponse(Response res) {
    if (stopping_) res.keep_alive(false);
    const bool close = res.need_eof();
    if (res.chunked()) {  // not made by the router; Beast frames it
      // A response to HEAD has no body (its headers stay as GET's would be):
      // bytes after them would be read as the next response.
      if (head_) res.body().clear();
      response_.emplace(std::move(res));
      WriteExpires();
      return http::async_write(
          stream_, *response_,
          beast::bind_front_handler(&Session<Stream>::OnWrite, shared_from_this(), close));
    }
    // Formatted into a buffer the connection keeps: no allocation once warm.
    out_.clear();
    SerializeResponse(res, head_, out_);
    DoWrite(close);
  }

  // Writes out_, then goes on with the connection (OnWrite).
  void DoWrite(bool close) {
    size_t sent = 0;
    if constexpr (!kTls) {
      // Most answers fit the socket's send buffer: write now, without a
      // round through the scheduler.
      error_code ec;
      sent = Tcp().write_some(net::buffer(out_), ec);
      if (ec != net::error::would_block && (ec || sent == out_.size())) {
        if (ec || close || stopping_) return OnWrite(close, ec, sent);
        // Read the next request only after what is already queued: by then
        // the client has often sent it, and the read finds it without a
        // failed recv() and a wait for readiness. Also bounds the stack when
        // requests are pipelined.
        return net::post(
            ex_, [self = shared_from_this(), close, sent] { self->OnWrite(close, {}, sent); });
      }
      if (ec) sent = 0;
    }
    WriteExpires();  // only a write that waits for the client needs one
    unread_.Owe(out_.size() - sent);
    net::async_write(
        stream_, net::buffer(out_.data() + sent, out_.size() - sent),
        beast::bind_front_handler(&Session<Stream>::OnWrite, shared_from_this(), close));
  }

  void OnWrite(bool close, error_code ec, size_t /*bytes*/) {
    busy_ = false;
    unread_.Settle();
    deadline_.WriteDone();
    response_.reset();
    // A large answer (metrics, admin pages) does not keep its room for the
    // life of a keep-alive connection.
    if (out_.capacity() > kKeptResponseBytes) std::string().swap(out_);
    if (ec) return;
    if (close || stopping_) return ShutdownSend();
    DoRead();  // one request at a time: read the next only now
  }

  // --- streaming (server/http/stream/event_sink.h) ---------------------------
  // The router answers with an event stream: the connection goes on as an
  // SseSession, which writes `head` and then what the sink is given.
  std::shared_ptr<EventSink> StartStream(Response head, size_t max_bytes) override {
    auto sink = std::make_shared<EventSink>(max_bytes);
    net::post(ex_, [self = shared_from_this(), head = std::move(head), sink]() mutable {
      self->HandOverStream(std::move(head), std::move(sink));
    });
    return sink;
  }

  void HandOverStream(Response head, std::shared_ptr<EventSink> sink) {
    if (stopping_ || !Tcp().is_open()) {
      sink->End();
      return Close();
    }
    head.keep_alive(false);  // the body ends with the connection
    std::string head_bytes;
    SerializeResponse(head, /*head=*/false, head_bytes);
    if (head_) sink->CloseAfter("");  // HEAD: the head alone
    // Nothing is pending on the stream: the request was read whole, and
    // its answer is this stream.
    deadline_.Cancel();
    handed_over_ = true;
    auto next = std::make_shared<SseSession<Stream>>(std::move(tls_), std::move(stream_), server_,
                                                     peer_, std::move(sink), std::move(head_bytes));
    HandOverTo(next);
    next->Start(/*reject=*/false);
  }

  // --- closing ---------------------------------------------------------------

  // Writes a final response, then lingers so the client reads it; the
  // request's id (given, or made now) goes on it and its log line.
  void SendAndClose(Response res) {
    const RequestIds ids = RequestIdsOf(request_);
    // The router's refusals (RefuseBeforeBody) carry theirs already.
    if (res.find("X-Request-Id") == res.end()) StampRequestId(res, ids.request.view());
    SEQD_LOG(kDebug).With(ids).With("status", res.result_int()).With("peer", peer_)
        << "http: answered and closed the connection";
    busy_ = true;
    out_.clear();
    SerializeResponse(res, /*head=*/false, out_);
    WriteExpires();
    net::async_write(stream_, net::buffer(out_),
                     beast::bind_front_handler(&Session<Stream>::OnFinalWrite, shared_from_this()));
  }

  void OnFinalWrite(error_code ec, size_t /*bytes*/) {
    busy_ = false;
    deadline_.WriteDone();
    if (ec) return;
    if (stopping_) return ShutdownSend();
    Linger();
  }

  // Half-closes, then discards what the client still sends until it closes,
  // the linger time passes or too much arrives. Closing with unread input
  // would reset the connection and could destroy our last response.
  void Linger() {
    ShutdownSend();
    buffer_.clear();
    discard_ = std::make_unique<char[]>(kHttpDiscardBufferBytes);
    ExpiresAfter(std::min<Clock::duration>(kHttpLingerTime, server_->options.idle_timeout));
    DoDiscard();
  }

  void DoDiscard() {
    stream_.async_read_some(
        net::buffer(discard_.get(), kHttpDiscardBufferBytes),
        beast::bind_front_handler(&Session<Stream>::OnDiscard, shared_from_this()));
  }

  void OnDiscard(error_code ec, size_t bytes) {
    discarded_ += bytes;
    if (ec || discarded_ > kLingerBytes) return;
    DoDiscard();
  }

  void ShutdownSend() {
    error_code ec;
    Tcp().shutdown(tcp::socket::shutdown_send, ec);
  }

  std::shared_ptr<net::ssl::context> tls_;  // TLS: the stream's context; before stream_
  Stream stream_;
  const Executor ex_;                // the connection's strand (or the only io thread)
  HttpDeadline<Executor> deadline_;  // of what is under way
  std::shared_ptr<HttpServer::Impl> server_;
  beast::flat_buffer buffer_;            // bytes read and not yet parsed
  std::optional<RequestParser> parser_;  // of the request being read
  HttpRequest request_;                  // what parser_ parses into
  std::string header_fields_;            // parser_'s scratch, kept for the next request
  bool header_checked_ = false;          // RefuseHeader ran on the request being read
  std::optional<Response> response_;     // a chunked response, kept alive while being written
  std::string out_;                      // the response being written
  bool busy_ = false;                    // a request is being answered or a reply written
  bool head_ = false;                    // the request being answered is a HEAD
  std::string peer_;                     // the client's address:port (audit lines)
  UnreadShare unread_;                   // out_'s bytes the socket has not taken
  bool stopping_ = false;
  bool handed_over_ = false;         // the connection is an SseSession's now
  std::unique_ptr<char[]> discard_;  // only while lingering
  size_t discarded_ = 0;
};

}  // namespace

void StopHeldRequests(HttpServer::Impl& server) { server.router.StopStreams(); }

std::shared_ptr<ListenedSession> MakeHttpSession(Socket socket,
                                                 std::shared_ptr<net::ssl::context> tls,
                                                 std::shared_ptr<HttpServer::Impl> server) {
  if (tls) {
    return std::make_shared<Session<TlsStream>>(std::move(socket), std::move(tls),
                                                std::move(server));
  }
  if (server->options.single_threaded) {
    if (std::optional<IoSocket> plain = Unstranded(socket)) {
      return std::make_shared<Session<IoSocket>>(std::move(*plain), nullptr, std::move(server));
    }
    if (!socket.is_open()) return nullptr;
  }
  return std::make_shared<Session<Socket>>(std::move(socket), nullptr, std::move(server));
}

}  // namespace seqd
