// A connection whose answer is an event stream (Server-Sent Events). The
// HTTP session (http_session.cc) hands its stream over once the router
// starts one, as Beast's advanced server hands a released stream to its
// websocket session: from then on this session owns the connection, and
// the HTTP session is gone. Private to server/http; its Beast templates
// compile in http_session.cc only.
//
// After the head, one write in flight at a time drains the sink, and a read
// stays pending to notice the client leaving (what it sends is discarded).
// No idle deadline: only each write must finish within the write timeout (a
// reader that stopped reading).
//
// Thread safety: Start() and Stop() may be called from any thread; every
// other member is touched only on the connection's strand.
#pragma once

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "server/http/http_deadline.h"
#include "server/http/http_session.h"
#include "server/http/stream/event_sink.h"
#include "server/net/tcp_listener.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace seqd {

template <typename Stream>
class SseSession : public ListenedSession, public std::enable_shared_from_this<SseSession<Stream>> {
  using Lowest =
      std::remove_reference_t<decltype(boost::beast::get_lowest_layer(std::declval<Stream&>()))>;
  using Executor = typename Lowest::executor_type;  // a strand, or the io_context's
  using Clock = std::chrono::steady_clock;
  using error_code = boost::system::error_code;
  using std::enable_shared_from_this<SseSession<Stream>>::shared_from_this;
  using std::enable_shared_from_this<SseSession<Stream>>::weak_from_this;

 public:
  // Takes over `stream` (with `tls`, its context for a TLS stream, else
  // null) to write `head` (the response head's bytes), then what `sink`
  // is given. REQUIRES: no operation is pending on `stream`.
  SseSession(std::shared_ptr<boost::asio::ssl::context> tls, Stream&& stream,
             std::shared_ptr<HttpServer::Impl> server, std::string peer,
             std::shared_ptr<EventSink> sink, std::string head)
      : tls_(std::move(tls)),
        stream_(std::move(stream)),
        ex_(Tcp().get_executor()),
        deadline_(ex_),
        server_(std::move(server)),
        peer_(std::move(peer)),
        sink_(std::move(sink)),
        out_(std::move(head)) {}

  ~SseSession() override {
    if (sink_) sink_->End();
  }

  // Writes the head, then the stream. `reject` is never set: the
  // connection was accepted by the HTTP session.
  void Start(bool /*reject*/) override {
    boost::asio::dispatch(ex_, [self = shared_from_this()] { self->WriteHead(); });
  }

  // Server shutdown: the stream ends after what is queued, each write
  // within the linger time.
  void Stop() override {
    boost::asio::post(ex_, [self = shared_from_this()] {
      self->stopping_ = true;
      self->ExpiresAfter(self->WriteTime());
      if (self->sink_) self->sink_->CloseAfter("");
    });
  }

  // Called by deadline_: a write not taken in time is counted; the
  // connection closes, failing what is under way.
  void OnDeadline(HttpDeadlineFor what) {
    if (what == HttpDeadlineFor::kWrite) HttpWriteTimedOut(*server_, peer_, Tcp().native_handle());
    Close();
  }

 private:
  Lowest& Tcp() { return boost::beast::get_lowest_layer(stream_); }

  void ExpiresAfter(Clock::duration d) {
    deadline_.After(d, HttpDeadlineFor::kOther, weak_from_this());
  }
  void WriteExpiresAfter(Clock::duration d) {
    deadline_.After(d, HttpDeadlineFor::kWrite, weak_from_this());
  }

  // How long one write may take: the write timeout, as an answer's, or the
  // linger time once the server is stopping (so the drain does not wait
  // for a reader that stopped reading).
  Clock::duration WriteTime() const {
    const Clock::duration write = server_->options.write_timeout;
    return stopping_ ? std::min<Clock::duration>(kHttpLingerTime, write) : write;
  }

  void WriteHead() {
    sink_->SetWake([weak = weak_from_this(), ex = ex_] {
      boost::asio::post(ex, [weak] {
        if (auto self = weak.lock()) self->DoWrite();
      });
    });
    writing_ = true;
    WriteExpiresAfter(WriteTime());
    boost::asio::async_write(
        stream_, boost::asio::buffer(out_),
        boost::beast::bind_front_handler(&SseSession::OnHead, shared_from_this()));
  }

  void OnHead(error_code ec, size_t /*bytes*/) {
    writing_ = false;
    deadline_.WriteDone();
    if (ec) return End();
    discard_ = std::make_unique<char[]>(kHttpDiscardBufferBytes);
    DoRead();
    DoWrite();
  }

  void DoRead() {
    stream_.async_read_some(
        boost::asio::buffer(discard_.get(), kHttpDiscardBufferBytes),
        boost::beast::bind_front_handler(&SseSession::OnRead, shared_from_this()));
  }

  void OnRead(error_code ec, size_t /*bytes*/) {
    if (ec) return End();  // the client closed (or the socket was closed)
    DoRead();
  }

  void DoWrite() {
    if (writing_ || !sink_) return;
    out_.clear();
    switch (sink_->Take(out_)) {
      case EventSink::Took::kIdle:
        return deadline_.Never();
      case EventSink::Took::kClose:
        return CloseAfterWritten();
      case EventSink::Took::kBytes:
        break;
    }
    writing_ = true;
    WriteExpiresAfter(WriteTime());
    boost::asio::async_write(
        stream_, boost::asio::buffer(out_),
        boost::beast::bind_front_handler(&SseSession::OnWrite, shared_from_this()));
  }

  void OnWrite(error_code ec, size_t bytes) {
    writing_ = false;
    deadline_.WriteDone();
    if (sink_) sink_->Written(bytes);
    if (ec) return End();
    DoWrite();
  }

  // Everything written and the producer closed: half-close; the pending
  // read sees the client close (or the linger deadline closes).
  void CloseAfterWritten() {
    sink_->End();
    sink_.reset();
    error_code ignored;
    Tcp().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
    ExpiresAfter(std::min<Clock::duration>(kHttpLingerTime, server_->options.idle_timeout));
  }

  // The connection is over: tell the producer, close.
  void End() {
    if (auto sink = std::move(sink_)) sink->End();
    Close();
  }

  // Closes the socket: pending reads and writes end with an error.
  void Close() {
    error_code ignored;
    Tcp().close(ignored);
    deadline_.Cancel();
  }

  std::shared_ptr<boost::asio::ssl::context> tls_;  // TLS: the stream's context; before stream_
  Stream stream_;
  const Executor ex_;                // the connection's strand (or the only io thread)
  HttpDeadline<Executor> deadline_;  // of the write under way, or of the linger
  const std::shared_ptr<HttpServer::Impl> server_;
  const std::string peer_;           // the client's address:port (log lines)
  std::shared_ptr<EventSink> sink_;  // the body, until the stream ends
  std::string out_;                  // the bytes being written
  std::unique_ptr<char[]> discard_;  // what the client sends, read and dropped
  bool writing_ = false;             // a write is in flight
  bool stopping_ = false;
};

}  // namespace seqd
