#include "bench_sse_subscriber.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <chrono>

namespace seqd::tools {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kReadSize = 64 * 1024;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

SseBenchSubscriber::SseBenchSubscriber(asio::io_context& io, tcp::resolver::results_type endpoints,
                                       std::string host, std::vector<std::string> convs,
                                       std::string token)
    : link_(io, std::move(endpoints)) {
  // Precondition: the ids need no percent-encoding (the benchmarks name their
  // conversations with letters, digits and _ - . : @ only).
  std::string target;
  if (convs.size() == 1) {
    target = "/conversations/" + convs[0] + "/events";
  } else {
    target = "/events";
    for (size_t i = 0; i < convs.size(); ++i) target += (i ? "&conv=" : "?conv=") + convs[i];
  }
  request_ = "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: text/event-stream\r\n";
  if (!token.empty()) request_ += "Authorization: Bearer " + token + "\r\n";
  request_ += "\r\n";
}

void SseBenchSubscriber::Start(std::function<void(bool)> subscribed) {
  link_.Start(shared_from_this(), request_, std::move(subscribed),
              [self = shared_from_this()] { self->Read(); });
}

void SseBenchSubscriber::Stop() { link_.Stop(shared_from_this()); }

void SseBenchSubscriber::Read() {
  const size_t old = in_.size();
  in_.resize(old + kReadSize);
  link_.socket().async_read_some(
      asio::buffer(in_.data() + old, kReadSize),
      [self = shared_from_this(), old](const boost::system::error_code& ec, size_t n) {
        self->in_.resize(old + n);
        if (self->link_.stopped()) return;
        if (ec)
          return self->Fail(ec == asio::error::eof ? "the server closed the stream"
                                                   : "read: " + ec.message());
        if (self->Parse()) self->Read();
      });
}

bool SseBenchSubscriber::Parse() {
  if (!head_done_) {
    const size_t end = in_.find("\r\n\r\n");
    if (end == std::string::npos) return true;
    const std::string head = Lower(std::string_view(in_).substr(0, end));
    const std::string status = head.substr(0, head.find("\r\n"));
    if (status.find(" 200 ") == std::string::npos) {
      Fail("stream refused: " + std::string(in_.substr(0, head.find("\r\n"))));
      return false;
    }
    chunked_ = head.find("\r\ntransfer-encoding: chunked") != std::string::npos;
    head_done_ = true;
    in_.erase(0, end + 4);
  }
  if (chunked_) {
    if (!Unchunk()) {
      Fail("malformed chunked body");
      return false;
    }
  } else {
    body_ += in_;
    in_.clear();
  }
  if (!body_.empty()) link_.Subscribed();
  Events();
  return !link_.stopped();
}

bool SseBenchSubscriber::Unchunk() {
  size_t pos = 0;
  for (;;) {
    const size_t eol = in_.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t size = 0;
    for (size_t i = pos; i < eol && in_[i] != ';'; ++i) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(in_[i])));
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0 || size > (size_t{1} << 40)) return false;
      size = size * 16 + static_cast<size_t>(d);
    }
    if (in_.size() < eol + 2 + size + 2) break;
    body_.append(in_, eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  in_.erase(0, pos);
  return true;
}

void SseBenchSubscriber::Events() {
  static constexpr std::string_view kPayload = "\"payload\":";
  const auto now = Clock::now();
  size_t pos = 0;
  for (;;) {
    const size_t end = body_.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string_view event(body_.data() + pos, end - pos);
    pos = end + 2;
    if (event.find("event: dropped") != std::string_view::npos) {
      Fail("event: dropped: a stream fell behind");
      return;
    }
    if (event.find("event: message") == std::string_view::npos) continue;  // retry, heartbeat
    // The payload string's first 16 characters: `"payload":`, optional
    // blanks, then the opening quote.
    size_t p = event.find(kPayload);
    if (p != std::string_view::npos) p = event.find_first_not_of(' ', p + kPayload.size());
    const auto stamp = p == std::string_view::npos || event[p] != '"'
                           ? std::nullopt
                           : PayloadStamp(event.substr(p + 1));
    link_.Record(stamp, now, "event without a seqbench stamp");
  }
  body_.erase(0, pos);
}

}  // namespace seqd::tools
