#include "server/http/http_responder.h"

#include <boost/beast/http/field.hpp>
#include <utility>

namespace seqd {

namespace http = boost::beast::http;

HttpResponse HttpResponder::ToResponse(const OkAnswer& answer) {
  HttpResponse res{http::status::ok, answer.version};
  res.set(http::field::content_type,
          boost::beast::string_view(answer.content_type.data(), answer.content_type.size()));
  res.set(http::field::cache_control, "no-store");
  if (!answer.request_id.empty()) {
    res.set("X-Request-Id",
            boost::beast::string_view(answer.request_id.data(), answer.request_id.size()));
  }
  res.keep_alive(answer.keep_alive);
  res.body().assign(answer.body.data(), answer.body.size());
  res.prepare_payload();
  return res;
}

void HttpResponder::RespondOk(const OkAnswer& answer) { Respond(ToResponse(answer)); }

namespace {

class FunctionResponder final : public HttpResponder {
 public:
  explicit FunctionResponder(std::function<void(HttpResponse)> fn) : fn_(std::move(fn)) {}
  void Respond(HttpResponse res) override { fn_(std::move(res)); }

 private:
  std::function<void(HttpResponse)> fn_;
};

}  // namespace

std::shared_ptr<HttpResponder> RespondTo(std::function<void(HttpResponse)> fn) {
  return std::make_shared<FunctionResponder>(std::move(fn));
}

}  // namespace seqd
