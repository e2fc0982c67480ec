#include "server/http/request_parser.h"

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>

namespace seqd {

namespace http = boost::beast::http;
using boost::beast::error_code;
using boost::beast::string_view;

namespace {

// Copies `value` into `out` unless a field of its name came before (`seen`):
// the first one counts, as message::find() finds it.
void KeepFirst(bool& seen, std::string& out, string_view value) {
  if (!seen) out.assign(value.data(), value.size());
  seen = true;
}

}  // namespace

RequestParser::RequestParser(HttpRequest& out, std::string& header_fields)
    : out_(out), fields_(header_fields) {
  out_.Clear();
  fields_.clear();
}

void RequestParser::Keep(Span& s, string_view value) {
  if (s.set) return;  // the first one counts, as message::find() finds it
  s.set = true;
  s.offset = static_cast<uint32_t>(fields_.size());
  s.size = static_cast<uint32_t>(value.size());
  fields_.append(value.data(), value.size());
}

void RequestParser::on_request_impl(http::verb method, string_view method_str, string_view target,
                                    int version, error_code& ec) {
  out_.method = method;
  out_.method_name.assign(method_str.data(), method_str.size());
  out_.target.assign(target.data(), target.size());
  out_.version = static_cast<unsigned>(version);
  ec = {};
}

void RequestParser::on_response_impl(int, string_view, int, error_code& ec) {
  ec = http::error::bad_version;  // never called: this is a request parser
}

void RequestParser::on_field_impl(http::field name, string_view name_string, string_view value,
                                  error_code& ec) {
  switch (name) {
    case http::field::host:
      ++host_count_;
      break;
    case http::field::content_length:
      content_length_values_ += 1 + static_cast<int>(std::count(value.begin(), value.end(), ','));
      break;
    case http::field::transfer_encoding:
      Keep(te_, value);
      break;
    case http::field::content_type:
      KeepFirst(has_content_type_, out_.content_type, value);
      break;
    case http::field::origin:
      out_.has_origin = true;
      break;
    case http::field::connection:
      Keep(connection_, value);
      break;
    case http::field::authorization:
      KeepFirst(has_authorization_, out_.authorization, value);
      break;
    case http::field::accept:
      KeepFirst(has_accept_, out_.accept, value);
      break;
    case http::field::expect:
      expect_continue_ = expect_continue_ || boost::beast::iequals(value, "100-continue");
      break;
    case http::field::unknown:
      // Not in Beast's table: compared by name, only when the length fits.
      if (name_string.size() == 12 && boost::beast::iequals(name_string, "x-request-id")) {
        KeepFirst(has_request_id_, out_.x_request_id, value);
      } else if (name_string.size() == 11 && boost::beast::iequals(name_string, "traceparent")) {
        KeepFirst(has_traceparent_, out_.traceparent, value);
      } else if (name_string.size() == 13 && boost::beast::iequals(name_string, "last-event-id")) {
        // Server-Sent Events resume.
        KeepFirst(has_last_event_id_, out_.last_event_id, value);
      }
      break;
    default:
      break;
  }
  ec = {};
}

void RequestParser::on_header_impl(error_code& ec) {
  out_.keep_alive = KeepAlive(out_.version, Field(connection_));
  ec = {};
}

// The body as http::string_body's reader keeps it.
void RequestParser::on_body_init_impl(boost::optional<std::uint64_t> const& content_length,
                                      error_code& ec) {
  if (content_length) {
    if (*content_length > out_.body.max_size()) {
      ec = http::error::buffer_overflow;
      return;
    }
    out_.body.reserve(static_cast<size_t>(*content_length));
  }
  ec = {};
}

std::size_t RequestParser::on_body_impl(string_view body, error_code& ec) {
  if (body.size() > out_.body.max_size() - out_.body.size()) {
    ec = http::error::buffer_overflow;
    return 0;
  }
  out_.body.append(body.data(), body.size());
  ec = {};
  return body.size();
}

void RequestParser::on_chunk_header_impl(std::uint64_t, string_view, error_code& ec) { ec = {}; }

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) {
  return on_body_impl(body, ec);
}

void RequestParser::on_finish_impl(error_code& ec) { ec = {}; }

}  // namespace seqd
