// One HTTP/1 request from bytes: Beast's basic_parser (the grammar, limits
// and errors of http::request_parser) writing into an HttpRequest the
// connection keeps, so a request costs no allocation once the strings have
// grown. Also keeps what HttpServer checks before it reads a body.
//
// One parser per request (a basic_parser cannot be reused); construct it in
// a std::optional.
//
// Thread safety: none; one connection's.
#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http/http_request.h"

namespace seqd {

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  // Clears `out` (keeping its storage) and parses into it; `out` must
  // outlive the parser. `header_fields` is scratch storage of the
  // connection's, reused the same way.
  RequestParser(HttpRequest& out, std::string& header_fields);

  // Of the header (once is_header_done()), the first value of each field;
  // "" if absent.
  bool has_host() const { return host_count_ > 0; }
  int host_count() const { return host_count_; }
  // Content-Length values given: one per field, plus one per comma in a
  // field ("5, 5"). More than one is refused even when they agree (RFC 9112
  // section 6.3 allows either), so no proxy in front can read another length.
  int content_length_values() const { return content_length_values_; }
  bool has_transfer_encoding() const { return te_.set; }
  std::string_view transfer_encoding() const { return Field(te_); }
  std::string_view content_type() const { return out_.content_type; }
  // `Expect: 100-continue` (case-insensitive): the client waits for an
  // interim 100 before sending the body.
  bool expect_continue() const { return expect_continue_; }

 private:
  struct Span {
    uint32_t offset = 0, size = 0;
    bool set = false;
  };
  std::string_view Field(Span s) const {
    return std::string_view(fields_).substr(s.offset, s.size);
  }
  void Keep(Span& s, boost::beast::string_view value);

  void on_request_impl(boost::beast::http::verb method, boost::beast::string_view method_str,
                       boost::beast::string_view target, int version,
                       boost::beast::error_code& ec) override;
  void on_response_impl(int code, boost::beast::string_view reason, int version,
                        boost::beast::error_code& ec) override;
  void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, boost::beast::error_code& ec) override;
  void on_header_impl(boost::beast::error_code& ec) override;
  void on_body_init_impl(boost::optional<std::uint64_t> const& content_length,
                         boost::beast::error_code& ec) override;
  std::size_t on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                            boost::beast::error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                 boost::beast::error_code& ec) override;
  void on_finish_impl(boost::beast::error_code& ec) override;

  HttpRequest& out_;
  std::string& fields_;  // the values of te_, connection_
  Span te_, connection_;
  int host_count_ = 0;
  int content_length_values_ = 0;
  bool has_authorization_ = false;
  bool has_accept_ = false;
  bool has_request_id_ = false;
  bool has_traceparent_ = false;
  bool has_content_type_ = false;
  bool has_last_event_id_ = false;
  bool expect_continue_ = false;
};

}  // namespace seqd
