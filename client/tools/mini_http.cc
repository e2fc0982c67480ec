// The tools' HTTP client: requests built by hand, responses parsed by
// Boost.Beast's response_parser (kept in this one file: Beast compiles
// slowly), one blocking request over plain TCP or TLS.
#include "mini_http.h"

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <memory_resource>
#include <stdexcept>
#include <tuple>

#include "seqd/client.h"
#include "tls_client.h"

namespace seqd::tools {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

namespace http = boost::beast::http;
// The header fields live in a stack arena (FieldArena): seqbench parses
// every response with a fresh parser, and a heap allocation per field costs
// about 5% of a small response's parse.
using FieldAllocator = std::pmr::polymorphic_allocator<char>;
using ResponseParser = http::response_parser<http::string_body, FieldAllocator>;

// Room for a usual response's fields on the stack; more spill to the heap.
struct FieldArena {
  std::array<std::byte, 2048> buffer;
  std::pmr::monotonic_buffer_resource resource{buffer.data(), buffer.size()};
  FieldAllocator allocator() { return FieldAllocator(&resource); }
};

constexpr std::uint32_t kMaxHeaderBytes = 64 * 1024;

std::string_view Std(boost::beast::string_view s) { return {s.data(), s.size()}; }

// ASCII lower case (header names are ASCII tokens).
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// A parser for one response: the whole body parsed as it arrives, headers
// up to kMaxHeaderBytes, a body of any size (boost::none, "no limit", is
// taken for a limit of 0 by Beast 1.74 on a Content-Length body).
void Configure(ResponseParser& parser) {
  parser.eager(true);
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
}

// Feeds input[used, end) to `parser`, moving `used` past what it took. A
// body delimited by the connection's close is an error unless the response
// says the connection closes (a keep-alive response must say its length).
HttpParse Feed(ResponseParser& parser, std::string_view input, size_t& used, std::string& error) {
  while (!parser.is_done()) {
    boost::beast::error_code ec;
    const size_t n = parser.put(boost::asio::buffer(input.data() + used, input.size() - used), ec);
    used += n;
    if (ec == http::error::need_more) return HttpParse::kNeedMore;
    if (ec) {
      error = ec.message();
      return HttpParse::kError;
    }
    if (parser.is_header_done() && parser.need_eof() && parser.get().keep_alive()) {
      error = "response without Content-Length on a keep-alive connection";
      return HttpParse::kError;
    }
    if (n == 0 && !parser.is_done()) return HttpParse::kNeedMore;
  }
  return HttpParse::kDone;
}

// The parsed response's status line and headers (names lower-cased); the
// body only once the parser is done.
HttpResponse ToResponse(ResponseParser& parser) {
  HttpResponse out;
  const auto& msg = parser.get();
  out.status = static_cast<int>(msg.result_int());
  out.reason = std::string(Std(msg.reason()));
  out.headers.reserve(static_cast<size_t>(std::distance(msg.begin(), msg.end())));
  for (const auto& field : msg) {
    out.headers.emplace_back(Lower(Std(field.name_string())), std::string(Std(field.value())));
  }
  out.keep_alive = parser.keep_alive();
  if (parser.is_done()) out.body = std::move(parser.get().body());
  return out;
}

}  // namespace

const char* const kTlsFlagsHelp =
    R"(  --tls              TLS: verify the server's certificate (CA, then its name)
  --tls-ca FILE      PEM CAs to verify the server with (default: the system's
                     CAs; env SEQD_TLS_CA)
  --tls-server-name NAME
                     the name the server's certificate must carry (default:
                     the host given; env SEQD_TLS_SERVER_NAME)
  --tls-cert FILE    client certificate for mTLS (env SEQD_TLS_CERT)
  --tls-key FILE     its private key (env SEQD_TLS_KEY)
                     Any --tls-* flag implies --tls.
)";

bool TlsFlags::Parse(const std::string& flag, const std::function<std::string()>& value) {
  if (flag == "--tls") {
    enabled = true;
  } else if (flag == "--tls-ca") {
    ca_file = value();
  } else if (flag == "--tls-server-name") {
    server_name = value();
  } else if (flag == "--tls-cert") {
    cert_file = value();
  } else if (flag == "--tls-key") {
    key_file = value();
  } else {
    return false;
  }
  enabled = true;
  return true;
}

void TlsFlags::ApplyEnvironment() {
  if (!enabled) return;
  auto fill = [](std::string& field, const char* name) {
    const char* env = std::getenv(name);
    if (field.empty() && env) field = env;
  };
  fill(ca_file, "SEQD_TLS_CA");
  fill(server_name, "SEQD_TLS_SERVER_NAME");
  fill(cert_file, "SEQD_TLS_CERT");
  fill(key_file, "SEQD_TLS_KEY");
}

void TlsFlags::ApplyTo(client::ClientOptions& options) const {
  options.tls = enabled;
  options.tls_ca_file = ca_file;
  options.tls_server_name = server_name;
  options.tls_cert_file = cert_file;
  options.tls_key_file = key_file;
}

const std::string* HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

HttpParse ParseHttpResponse(std::string_view input, HttpResponse& out, size_t& consumed,
                            std::string& error) {
  FieldArena arena;
  ResponseParser parser(std::piecewise_construct, std::make_tuple(),
                        std::make_tuple(arena.allocator()));
  Configure(parser);
  size_t used = 0;
  const HttpParse st = Feed(parser, input, used, error);
  if (st == HttpParse::kError) return st;
  if (parser.is_header_done()) out = ToResponse(parser);
  if (st == HttpParse::kDone) consumed = used;
  return st;
}

std::string BuildHttpRequest(std::string_view method, std::string_view target,
                             std::string_view host, std::string_view body,
                             std::string_view content_type, std::string_view token) {
  std::string req;
  req.reserve(128 + target.size() + body.size() + token.size());
  req.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ").append(host);
  req.append("\r\nUser-Agent: seqd-tools\r\nAccept: application/json\r\n");
  if (!token.empty()) req.append("Authorization: Bearer ").append(token).append("\r\n");
  if (!body.empty() || method == "POST" || method == "PUT") {
    req.append("Content-Type: ").append(content_type).append("\r\n");
    req.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  req.append("\r\n").append(body);
  return req;
}

std::optional<HttpResponse> HttpCall(const std::string& host, const std::string& port,
                                     std::string_view method, std::string_view target,
                                     std::string_view body, std::chrono::milliseconds timeout,
                                     std::string& error, std::string_view token,
                                     const TlsFlags& tls) {
  std::shared_ptr<asio::ssl::context> tls_context;
  if (tls.enabled) {
    try {
      tls_context = client::detail::MakeTlsClientContext(tls.ca_file, tls.cert_file, tls.key_file);
    } catch (const std::invalid_argument& e) {
      error = e.what();
      return std::nullopt;
    }
  }
  asio::io_context io;
  tcp::socket socket(io);
  // With TLS, every read and write goes through it.
  std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls_stream;
  if (tls_context)
    tls_stream = std::make_unique<asio::ssl::stream<tcp::socket&>>(socket, *tls_context);
  tcp::resolver resolver(io);
  asio::steady_timer deadline(io);
  bool timed_out = false;
  deadline.expires_after(timeout);
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;
    timed_out = true;
    resolver.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
  });

  const std::string host_header =
      host.find(':') != std::string::npos ? "[" + host + "]:" + port : host + ":" + port;
  const std::string request =
      BuildHttpRequest(method, target, host_header, body, "application/json", token);
  // The response as it arrives: `in` holds what the parser has not taken yet.
  FieldArena arena;
  ResponseParser parser(std::piecewise_construct, std::make_tuple(),
                        std::make_tuple(arena.allocator()));
  Configure(parser);
  std::string in;
  std::optional<HttpResponse> result;
  char buf[16 * 1024];
  boost::system::error_code failure;
  std::string stage = "resolve";

  std::function<void()> read_more = [&] {
    auto on_read = [&](const boost::system::error_code& ec, size_t n) {
      in.append(buf, n);
      size_t used = 0;
      std::string perr;
      const HttpParse st = Feed(parser, in, used, perr);
      in.erase(0, used);
      if (st == HttpParse::kDone) {
        result = ToResponse(parser);
        deadline.cancel();
        return;
      }
      if (st == HttpParse::kError) {
        error = "bad HTTP response from " + host + ":" + port + ": " + perr;
        deadline.cancel();
        return;
      }
      if (ec) {
        // Over TLS a close without close_notify is "stream truncated".
        const bool eof = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
        boost::beast::error_code eof_ec;
        // A body delimited by the close ends here; any other response is cut short.
        if (eof && parser.is_header_done()) parser.put_eof(eof_ec);
        if (eof && parser.is_done() && !eof_ec) {
          result = ToResponse(parser);
        } else {
          failure = ec;
          stage = "read from";
        }
        deadline.cancel();
        return;
      }
      read_more();
    };
    if (tls_stream) {
      tls_stream->async_read_some(asio::buffer(buf), on_read);
    } else {
      socket.async_read_some(asio::buffer(buf), on_read);
    }
  };

  auto on_written = [&](const boost::system::error_code& ec, size_t) {
    if (ec) {
      failure = ec;
      deadline.cancel();
      return;
    }
    stage = "read from";
    read_more();
  };
  auto write_request = [&] {
    stage = "write to";
    if (tls_stream) {
      asio::async_write(*tls_stream, asio::buffer(request), on_written);
    } else {
      asio::async_write(socket, asio::buffer(request), on_written);
    }
  };

  resolver.async_resolve(
      host, port,
      [&](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
        if (ec) {
          failure = ec;
          deadline.cancel();
          return;
        }
        stage = "connect to";
        asio::async_connect(
            socket, results, [&](const boost::system::error_code& ec, const tcp::endpoint&) {
              if (ec) {
                failure = ec;
                deadline.cancel();
                return;
              }
              if (!tls_stream) return write_request();
              std::string name_error;
              const std::string& name = tls.server_name.empty() ? host : tls.server_name;
              if (!client::detail::SetTlsPeerName(tls_stream->native_handle(), name, name_error)) {
                error = name_error;
                deadline.cancel();
                return;
              }
              stage = "TLS handshake with";
              tls_stream->async_handshake(
                  asio::ssl::stream_base::client, [&](const boost::system::error_code& ec) {
                    if (ec) {
                      if (!timed_out) {
                        error = "TLS handshake with " + host + ":" + port + ": " +
                                client::detail::TlsFailureReason(tls_stream->native_handle(), ec);
                      }
                      deadline.cancel();
                      return;
                    }
                    write_request();
                  });
            });
      });
  io.run();
  if (result) return result;
  if (timed_out) {
    error = "no answer from " + host + ":" + port + " within " + std::to_string(timeout.count()) +
            " ms";
  } else if (error.empty()) {
    error = stage + " " + host + ":" + port + ": " + failure.message();
  }
  return std::nullopt;
}

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':' || c == '@') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace seqd::tools
