// The route table (HttpRoutes(), server/http/http_ops.h) cannot lie: each
// row, sent through the real ApiRouter, is answered by a route (not 404 "no
// such endpoint", not 405) and counted under its op's metrics label, and
// OPTIONS on each path lists exactly the table's methods for it. ctest
// openapi_routes then compares the table with docs/openapi.yaml.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/http/http_ops.h"
#include "server/metrics/metrics.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/snowflake/wall_clock.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/test_services.h"

using namespace seqd;
using namespace std::chrono_literals;
namespace http = boost::beast::http;

namespace {

constexpr int64_t kT0 = 1795360448589;

// Open services (no tokens) over memory stores, with snowflake IDs served.
struct Fixture : AdminOverMemory {
  ManualWallClock wall{kT0};
  Metrics metrics{"test"};
  SnowflakeGenerator generator{wall, clock, SnowflakeOptions{}};
  TestServices services{
      segments, runner, allocator, {.keys = &admin, .snowflake = &generator, .metrics = &metrics}};
  ApiRouter router{services, RouterOptions{"t", std::chrono::steady_clock::now()}};

  Fixture() { generator.Grant(1, 0, kT0 + 1'000'000'000, clock.Now() + 1h); }
  ~Fixture() { runner.RunAll(); }

  // Sends a request and waits for its answer: database work runs here,
  // message-store work on the service's threads.
  ApiRouter::Response Send(http::verb method, const std::string& target) {
    ApiRouter::Request req{method, target, 11};
    req.set(http::field::host, "seqd");
    req.prepare_payload();
    auto p = std::make_shared<std::promise<ApiRouter::Response>>();
    auto f = p->get_future();
    router.Handle(std::move(req), [p](ApiRouter::Response res) { p->set_value(std::move(res)); });
    for (int i = 0; i < 500; ++i) {
      runner.RunAll();
      if (f.wait_for(10ms) == std::future_status::ready) return f.get();
      clock.Advance(100ms);
    }
    FAIL("no answer to " << target);
    return {};
  }

  // Requests counted so far under the HTTP op label `op`.
  double Counted(std::string_view op) {
    const std::string text = metrics.Render();
    const std::string want = "op=\"" + std::string(op) + "\"";
    double total = 0;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("seqd_requests_total{", 0) != 0) continue;
      if (line.find("interface=\"http\"") == std::string::npos) continue;
      if (line.find(want) == std::string::npos) continue;
      total += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return total;
  }
};

// A concrete path for a template: each "{name}" becomes a valid value.
std::string Concrete(std::string_view path) {
  static const std::map<std::string, std::string, std::less<>> kValues = {
      {"key", "order_k"}, {"conv", "sg_c"}, {"user", "u1"}, {"seq", "1"}, {"id", "1"}};
  std::string out;
  for (size_t i = 0; i < path.size();) {
    if (path[i] != '{') {
      out += path[i++];
      continue;
    }
    const size_t end = path.find('}', i);
    REQUIRE(end != std::string_view::npos);
    auto it = kValues.find(path.substr(i + 1, end - i - 1));
    REQUIRE_MESSAGE(it != kValues.end(), "no sample value for " << path);
    out += it->second;
    i = end + 1;
  }
  return out;
}

std::set<std::string> Methods(std::string_view allow) {
  std::set<std::string> out;
  std::istringstream in{std::string(allow)};
  for (std::string m; std::getline(in, m, ',');) {
    m.erase(0, m.find_first_not_of(' '));
    m.erase(m.find_last_not_of(' ') + 1);
    out.insert(m);
  }
  return out;
}

}  // namespace

TEST_CASE("route table: rows are unique and name known methods") {
  std::set<std::pair<std::string_view, std::string_view>> seen;
  REQUIRE(!HttpRoutes().empty());
  for (const HttpRoute& r : HttpRoutes()) {
    INFO(r.method << " " << r.path);
    CHECK(seen.insert({r.method, r.path}).second);
    CHECK((r.method == "GET" || r.method == "POST" || r.method == "PUT" || r.method == "DELETE"));
    CHECK(r.path.front() == '/');
    CHECK(r.op != HttpOp::kOther);
  }
}

TEST_CASE("route table: every row reaches its op through ApiRouter") {
  Fixture f;
  for (const HttpRoute& r : HttpRoutes()) {
    const std::string target = Concrete(r.path);
    INFO(r.method << " " << r.path << " as " << target);
    const std::string_view label = HttpOpFor(r.op).metric_label;
    const double before = f.Counted(label);
    const ApiRouter::Response res = f.Send(http::string_to_verb(std::string(r.method)), target);
    INFO("answer " << res.result_int() << " " << res.body());
    CHECK(res.result() != http::status::method_not_allowed);
    CHECK(res.body().find("no such endpoint") == std::string::npos);
    CHECK(f.Counted(label) == before + 1);
  }
}

TEST_CASE("route table: OPTIONS on each path lists exactly the table's methods") {
  Fixture f;
  std::map<std::string_view, std::set<std::string>> methods;
  for (const HttpRoute& r : HttpRoutes()) methods[r.path].insert(std::string(r.method));
  for (auto& [route_path, want] : methods) {
    const std::string_view path = route_path;  // clang 14 cannot capture a binding (INFO does)
    const std::string target = Concrete(path);
    INFO(path << " as " << target);
    const ApiRouter::Response res = f.Send(http::verb::options, target);
    REQUIRE(res.result() == http::status::no_content);
    std::set<std::string> expected = want;
    expected.insert("OPTIONS");
    CHECK(Methods(std::string(res[http::field::allow])) == expected);
  }
}
