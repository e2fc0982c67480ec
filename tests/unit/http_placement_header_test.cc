// Store groups over HTTP (docs/http-api.md): every answer carries
// Seqd-Placement-Version, the instance's placement version as it answers,
// on the connection's fast path (AppendOkHeader) as on the general one;
// without store groups, no answer has it.
#include <doctest/doctest.h>

#include <string>

#include "server/http/http_exchange.h"
#include "server/http/http_responder.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/fake_placement.h"
#include "tests/unit/router_fixture.h"

using namespace seqd;
using namespace std::chrono_literals;
namespace http = boost::beast::http;

namespace {

std::string PlacementField(const ApiRouter::Response& res) {
  auto it = res.find("Seqd-Placement-Version");
  return it == res.end() ? "" : std::string(it->value());
}

}  // namespace

TEST_CASE("http: the fast path's head is the one the general path writes, placement field too") {
  for (int64_t version : {int64_t{-1}, int64_t{0}, int64_t{42}, int64_t{1} << 40}) {
    CAPTURE(version);
    const OkAnswer answer{11, true, "application/json", "{\"id\":1}", "req-1", version};
    std::string general;
    SerializeResponse(HttpResponder::ToResponse(answer), /*head=*/false, general);
    std::string fast;
    AppendOkHeader(answer.content_type, answer.body.size(), answer.request_id,
                   answer.placement_version, fast);
    fast += answer.body;
    CHECK(fast == general);
    const bool has = fast.find("\r\nSeqd-Placement-Version: ") != std::string::npos;
    CHECK(has == (version >= 0));
    if (has)
      CHECK(fast.find("Seqd-Placement-Version: " + std::to_string(version) + "\r\n") !=
            std::string::npos);
  }
}

TEST_CASE("http: with store groups every answer carries the placement version as it answers") {
  MemoryStore mem;
  REQUIRE(mem.CreateKey("k", 100, "").ok());
  FakePlacement placement;
  placement.view.groups = {"home", "b"};
  placement.view.map = std::make_shared<PlacementMap>(PlacementMap{5, {}});
  placement.current = 5;
  RouterFixture f(mem, 1s, KeyRules(), &placement);

  ApiRouter::Response ok = f.Get("/seq/k");  // the ID routes' fast answer
  CHECK(ok.result() == http::status::ok);
  CHECK(PlacementField(ok) == "5");
  ApiRouter::Response missing = f.Get("/no/such/route");  // an error, the general way
  CHECK(missing.result() == http::status::not_found);
  CHECK(PlacementField(missing) == "5");
  CHECK(PlacementField(f.Get("/admin/placement")) == "5");

  placement.current = 6;  // read anew for each answer
  CHECK(PlacementField(f.Get("/seq/k")) == "6");
  CHECK(PlacementField(f.Get("/healthz")) == "6");

  RouterFixture plain(mem, 1s);  // no store groups: no field anywhere
  CHECK(PlacementField(plain.Get("/seq/k")).empty());
  CHECK(PlacementField(plain.Get("/no/such/route")).empty());
}
