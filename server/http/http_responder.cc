#include "server/http/http_responder.h"

#include <boost/beast/http/field.hpp>
#include <utility>

#include "server/http/stream/event_sink.h"

namespace seqd {

namespace http = boost::beast::http;

void StampPlacementVersion(HttpResponse& res, int64_t version) {
  res.set(boost::beast::string_view(kPlacementVersionField.data(), kPlacementVersionField.size()),
          std::to_string(version));
}

HttpResponse HttpResponder::ToResponse(const OkAnswer& answer) {
  HttpResponse res{http::status::ok, answer.version};
  res.set(http::field::content_type,
          boost::beast::string_view(answer.content_type.data(), answer.content_type.size()));
  res.set(http::field::cache_control, "no-store");
  if (!answer.request_id.empty()) {
    res.set("X-Request-Id",
            boost::beast::string_view(answer.request_id.data(), answer.request_id.size()));
  }
  if (answer.placement_version >= 0) StampPlacementVersion(res, answer.placement_version);
  res.keep_alive(answer.keep_alive);
  res.body().assign(answer.body.data(), answer.body.size());
  res.prepare_payload();
  return res;
}

void HttpResponder::RespondOk(const OkAnswer& answer) { Respond(ToResponse(answer)); }

std::shared_ptr<EventSink> HttpResponder::StartStream(HttpResponse, size_t) { return nullptr; }

namespace {

class FunctionResponder final : public HttpResponder {
 public:
  FunctionResponder(std::function<void(HttpResponse)> fn,
                    std::function<void(HttpResponse, std::shared_ptr<EventSink>)> stream)
      : fn_(std::move(fn)), stream_(std::move(stream)) {}
  void Respond(HttpResponse res) override { fn_(std::move(res)); }
  std::shared_ptr<EventSink> StartStream(HttpResponse head, size_t max_bytes) override {
    if (!stream_) return nullptr;
    auto sink = std::make_shared<EventSink>(max_bytes);
    stream_(std::move(head), sink);
    return sink;
  }

 private:
  std::function<void(HttpResponse)> fn_;
  std::function<void(HttpResponse, std::shared_ptr<EventSink>)> stream_;
};

}  // namespace

std::shared_ptr<HttpResponder> RespondTo(
    std::function<void(HttpResponse)> fn,
    std::function<void(HttpResponse, std::shared_ptr<EventSink>)> stream) {
  return std::make_shared<FunctionResponder>(std::move(fn), std::move(stream));
}

}  // namespace seqd
