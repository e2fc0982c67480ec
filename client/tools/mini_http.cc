#include "mini_http.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>

#include "seqd/client.h"
#include "tls_client.h"

namespace seqd::tools {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

constexpr size_t kMaxHeaderBytes = 64 * 1024;

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
  const size_t head_end = input.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (input.size() > kMaxHeaderBytes) {
      error = "response header too large";
      return HttpParse::kError;
    }
    return HttpParse::kNeedMore;
  }
  out = HttpResponse{};
  std::string_view head = input.substr(0, head_end);
  const size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  // HTTP/1.1 200 OK
  if (status_line.substr(0, 5) != "HTTP/" || status_line.size() < 12) {
    error = "not an HTTP response";
    return HttpParse::kError;
  }
  const bool http10 = status_line.substr(5, 3) == "1.0";
  auto [p, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, out.status);
  if (ec != std::errc() || p != status_line.data() + 12) {
    error = "bad status line";
    return HttpParse::kError;
  }
  out.reason = std::string(Trim(status_line.substr(12)));
  out.keep_alive = !http10;
  std::optional<size_t> content_length;
  bool chunked = false;
  std::string_view rest = line_end == std::string_view::npos ? "" : head.substr(line_end + 2);
  while (!rest.empty()) {
    const size_t eol = rest.find("\r\n");
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? "" : rest.substr(eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      error = "bad header line";
      return HttpParse::kError;
    }
    std::string name = Lower(Trim(line.substr(0, colon)));
    std::string value(Trim(line.substr(colon + 1)));
    if (name == "content-length") {
      size_t n = 0;
      auto [q, e] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (e != std::errc() || q != value.data() + value.size()) {
        error = "bad Content-Length";
        return HttpParse::kError;
      }
      content_length = n;
    } else if (name == "transfer-encoding") {
      chunked = Lower(value).find("chunked") != std::string::npos;
    } else if (name == "connection") {
      const std::string v = Lower(value);
      if (v.find("close") != std::string::npos) out.keep_alive = false;
      if (v.find("keep-alive") != std::string::npos) out.keep_alive = true;
    }
    out.headers.emplace_back(std::move(name), std::move(value));
  }
  size_t pos = head_end + 4;
  const bool no_body = out.status / 100 == 1 || out.status == 204 || out.status == 304;
  if (no_body) {
    consumed = pos;
    return HttpParse::kDone;
  }
  if (chunked) {
    std::string body;
    for (;;) {
      const size_t eol = input.find("\r\n", pos);
      if (eol == std::string_view::npos) return HttpParse::kNeedMore;
      std::string_view size_line = input.substr(pos, eol - pos);
      size_line = size_line.substr(0, size_line.find(';'));
      size_t n = 0;
      auto [q, e] = std::from_chars(size_line.data(), size_line.data() + size_line.size(), n, 16);
      if (e != std::errc() || size_line.empty()) {
        error = "bad chunk size";
        return HttpParse::kError;
      }
      pos = eol + 2;
      if (n == 0) {
        // Trailers (ignored) end with an empty line.
        for (;;) {
          const size_t t = input.find("\r\n", pos);
          if (t == std::string_view::npos) return HttpParse::kNeedMore;
          const bool empty = t == pos;
          pos = t + 2;
          if (empty) break;
        }
        out.body = std::move(body);
        consumed = pos;
        return HttpParse::kDone;
      }
      if (input.size() < pos + n + 2) return HttpParse::kNeedMore;
      body.append(input.substr(pos, n));
      pos += n + 2;
    }
  }
  if (!content_length) {
    // Body until close: we only accept that when the server closes.
    if (out.keep_alive) {
      error = "response without Content-Length on a keep-alive connection";
      return HttpParse::kError;
    }
    return HttpParse::kNeedMore;  // caller treats EOF as the end
  }
  if (input.size() < pos + *content_length) return HttpParse::kNeedMore;
  out.body = std::string(input.substr(pos, *content_length));
  consumed = pos + *content_length;
  return HttpParse::kDone;
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
  std::string in;
  std::optional<HttpResponse> result;
  char buf[16 * 1024];
  boost::system::error_code failure;
  std::string stage = "resolve";

  std::function<void()> read_more = [&] {
    auto on_read = [&](const boost::system::error_code& ec, size_t n) {
      in.append(buf, n);
      HttpResponse res;
      size_t consumed = 0;
      std::string perr;
      const HttpParse st = ParseHttpResponse(in, res, consumed, perr);
      if (st == HttpParse::kDone) {
        result = std::move(res);
        deadline.cancel();
        return;
      }
      if (st == HttpParse::kError) {
        error = perr;
        deadline.cancel();
        return;
      }
      if (ec) {
        // Over TLS a close without close_notify is "stream truncated".
        const bool eof = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
        if (eof && !res.keep_alive && res.status != 0) {
          // Body delimited by close.
          const size_t head_end = in.find("\r\n\r\n");
          res.body = in.substr(head_end + 4);
          result = std::move(res);
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
