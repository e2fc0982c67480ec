// The status page at GET /: the pure renderer (escaping, store health,
// version, sorting) and the route through ApiRouter.
#include "server/http/routes/status_page.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/key_admin.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/fake_placement.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/test_stores.h"

using namespace seqd;
using namespace std::chrono_literals;
namespace http = boost::beast::http;

namespace {

bool Contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

KeySnapshot Snap(std::string key) {
  KeySnapshot s;
  s.key = std::move(key);
  s.step = 1000;
  s.table_step = 1000;
  s.current = BufferSnapshot{true, 1, 43, 1000, 1000};
  return s;
}

StatusPageInput UpInput() {
  StatusPageInput in;
  in.version = "1.2.3";
  in.uptime = 3725s;
  in.store_up = true;
  in.rows.emplace();
  return in;
}

}  // namespace

TEST_CASE("status page: HtmlEscape and FormatDuration") {
  CHECK(HtmlEscape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(HtmlEscape("order-1:x@y.z_") == "order-1:x@y.z_");
  CHECK(FormatDuration(0s) == "0s");
  CHECK(FormatDuration(59s) == "59s");
  CHECK(FormatDuration(3725s) == "1h 2m 5s");
  CHECK(FormatDuration(std::chrono::seconds(2 * 86400 + 7)) == "2d 0h 0m 7s");
  CHECK(FormatDuration(-5s) == "0s");
}

TEST_CASE("status page: a self-contained document with version, uptime and store up") {
  StatusPageInput in = UpInput();
  in.snapshots.push_back(Snap("order"));
  const std::string page = RenderStatusPage(in);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(Contains(page, "<meta charset=\"utf-8\">"));
  CHECK(Contains(page, "<meta http-equiv=\"refresh\" content=\"5\">"));
  CHECK(Contains(page, "<b id=\"version\">1.2.3</b>"));
  CHECK(Contains(page, "1h 2m 5s"));
  CHECK(Contains(page, "class=\"pill up\">store up<"));
  CHECK_FALSE(Contains(page, "store-down"));
  CHECK(Contains(page, ">order<"));
  // No external assets and no scripts.
  CHECK_FALSE(Contains(page, "<script"));
  CHECK_FALSE(Contains(page, "<link"));
  CHECK_FALSE(Contains(page, "http://"));
  CHECK_FALSE(Contains(page, "https://"));
  // Buffer: first - last, next, remaining.
  CHECK(Contains(page, "1 &ndash; 1000"));
  CHECK(Contains(page, "next 43"));
  CHECK(Contains(page, "958 left"));

  in.refresh_s = 0;
  CHECK_FALSE(Contains(RenderStatusPage(in), "http-equiv"));
}

TEST_CASE("status page: the dense section shows blocks per transaction and marks failures") {
  StatusPageInput in = UpInput();
  CHECK_FALSE(Contains(RenderStatusPage(in), "id=\"dense\""));
  in.dense = DenseStats{90, 20, 3, 0, 7};
  std::string page = RenderStatusPage(in);
  CHECK(Contains(page, "<table id=\"dense\">"));
  CHECK(Contains(page, "<td>90</td><td>20</td><td>4.5</td><td>3</td><td>0</td><td>7</td>"));
  in.dense->failures = 2;
  page = RenderStatusPage(in);
  CHECK(Contains(page, "<td class=\"warn\"><b>2</b></td>"));
}

TEST_CASE("status page: a dense key's row says it has no buffers; others keep theirs") {
  StatusPageInput in = UpInput();
  in.rows->push_back(KeyRow{"d_conv", 8, 100, "auto-created (dense)", 0});
  in.snapshots.push_back(Snap("order"));
  in.is_dense = [](std::string_view key) { return key.starts_with("d_"); };
  const std::string page = RenderStatusPage(in);
  const size_t dense_row = page.find(">d_conv<");
  REQUIRE(dense_row != std::string::npos);
  const std::string row = page.substr(dense_row, page.find("</tr>", dense_row) - dense_row);
  CHECK(Contains(row, ">dense<"));
  CHECK(Contains(row, "the max ID is the last one handed out"));
  CHECK_FALSE(Contains(row, "not in memory"));
  const size_t order_row = page.find(">order");
  REQUIRE(order_row != std::string::npos);
  CHECK_FALSE(Contains(page.substr(order_row, 400), ">dense<"));
}

TEST_CASE("status page: everything from outside is escaped") {
  StatusPageInput in = UpInput();
  in.version = "1.0<b>";
  KeySnapshot s = Snap("k<script>alert(1)</script>");
  s.last_error = "duplicate \"entry\" <x> & 'y'";
  in.snapshots.push_back(s);
  in.rows->push_back(KeyRow{"row<i>", 5, 10, "desc <img src=x onerror=alert(1)>", 0});
  in.store_up = false;
  in.store_error = "<b>down</b> & out";
  const std::string page = RenderStatusPage(in);
  CHECK_FALSE(Contains(page, "<script>"));
  CHECK_FALSE(Contains(page, "<img"));
  CHECK_FALSE(Contains(page, "<x>"));
  CHECK_FALSE(Contains(page, "1.0<b>"));
  CHECK_FALSE(Contains(page, "<b>down</b>"));
  CHECK_FALSE(Contains(page, "row<i>"));
  CHECK(Contains(page, "k&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK(Contains(page, "duplicate &quot;entry&quot; &lt;x&gt; &amp; &#39;y&#39;"));
  CHECK(Contains(page, "desc &lt;img src=x onerror=alert(1)&gt;"));
  CHECK(Contains(page, "1.0&lt;b&gt;"));
  CHECK(Contains(page, "&lt;b&gt;down&lt;/b&gt; &amp; out"));
  CHECK(Contains(page, "row&lt;i&gt;"));
}

TEST_CASE("status page: store down banner") {
  StatusPageInput in = UpInput();
  in.store_up = false;
  in.store_error = "store unavailable: connection refused";
  in.rows.reset();
  in.rows_error = "store down";
  in.snapshots.push_back(Snap("order"));
  const std::string page = RenderStatusPage(in);
  CHECK(Contains(page, "id=\"store-down\""));
  CHECK(Contains(page, "Store down: store unavailable: connection refused"));
  CHECK(Contains(page, "class=\"pill down\">store down<"));
  CHECK(Contains(page, "<title>seqd 1.2.3 &middot; store down</title>"));
  CHECK(Contains(page, "registered keys unavailable: store down"));
  CHECK(Contains(page, ">order<"));  // memory still shown
}

TEST_CASE("status page: keys sorted by name, merged from memory and store, auto-created marked") {
  StatusPageInput in = UpInput();
  KeySnapshot zeta = Snap("zeta");
  KeySnapshot alpha = Snap("alpha");
  alpha.auto_created = true;
  alpha.loading = true;
  alpha.parked = 3;
  in.snapshots = {zeta, alpha};
  in.rows->push_back(KeyRow{"mid", 1, 100, "not used yet", 0});
  in.rows->push_back(KeyRow{"zeta", 2001, 1000, "orders", 0});
  const std::string page = RenderStatusPage(in);
  const size_t a = page.find(">alpha<");
  const size_t m = page.find(">mid<");
  const size_t z = page.find(">zeta<");
  REQUIRE(a != std::string::npos);
  REQUIRE(m != std::string::npos);
  REQUIRE(z != std::string::npos);
  CHECK(a < m);
  CHECK(m < z);
  // alpha: auto tag, loading, parked. mid: only in the store.
  const std::string alpha_row = page.substr(a, m - a);
  CHECK(Contains(alpha_row, "title=\"auto-created\">auto<"));
  CHECK(Contains(alpha_row, ">loading<"));
  CHECK(Contains(alpha_row, "<b>3</b>"));
  const std::string mid_row = page.substr(m, z - m);
  CHECK(Contains(mid_row, "not in memory"));
  CHECK_FALSE(Contains(mid_row, "auto-created"));
  CHECK(Contains(page.substr(z), "2001"));
  CHECK(Contains(page, "2 in memory &middot; 2 registered in the store"));
  CHECK(std::count(page.begin(), page.end(), '\n') > 0);
}

TEST_CASE("status page: rate, runway and the low-runway highlight") {
  StatusPageInput in = UpInput();
  KeySnapshot hot = Snap("hot");
  hot.rate_per_s = 8;
  hot.runway_s = 119.9;  // < 10 min
  KeySnapshot calm = Snap("calm");
  calm.rate_per_s = 1234.5;
  calm.runway_s = 3600;
  KeySnapshot still = Snap("still");  // no recent use: no runway
  in.snapshots = {hot, calm, still};
  const std::string page = RenderStatusPage(in);
  CHECK(Contains(page, "<th>Rate (IDs/s)</th><th>Runway</th>"));
  CHECK(Contains(page, "id=\"low-runway\">1 key has less than 10 min"));
  const size_t calm_at = page.find(">calm<");
  const size_t hot_at = page.find(">hot<");
  const size_t still_at = page.find(">still<");
  REQUIRE(calm_at < hot_at);
  REQUIRE(hot_at < still_at);
  const std::string calm_row = page.substr(calm_at, hot_at - calm_at);
  const std::string hot_row = page.substr(hot_at, still_at - hot_at);
  const std::string still_row = page.substr(still_at);
  CHECK(Contains(page, "<tr class=\"low\"><td class=\"l key\">hot<"));
  CHECK(Contains(hot_row, ">low runway<"));
  CHECK(Contains(hot_row, "<td>8.0</td>"));
  CHECK(Contains(hot_row, "<td class=\"warn\"><b>1m 59s</b></td>"));
  CHECK_FALSE(Contains(calm_row, "low runway"));
  CHECK(Contains(calm_row, "<td>1234</td>") != Contains(calm_row, "<td>1235</td>"));
  CHECK(Contains(calm_row, "<td>1h 0m 0s</td>"));
  CHECK(Contains(still_row, "<td>0.0</td>"));
  CHECK(Contains(still_row, "title=\"no IDs taken recently\">&ndash;</td>"));
  CHECK_FALSE(Contains(still_row, "low runway"));
  // Only one row is highlighted.
  size_t lows = 0;
  for (size_t at = page.find("<tr class=\"low\">"); at != std::string::npos;
       at = page.find("<tr class=\"low\">", at + 1)) {
    ++lows;
  }
  CHECK(lows == 1);

  in.snapshots = {calm, still};
  CHECK_FALSE(Contains(RenderStatusPage(in), "low-runway"));
}

TEST_CASE("status page: GET / through ApiRouter shows a key that was used") {
  MemoryStore mem;
  REQUIRE(mem.CreateKey("order", 1000, "orders <main>").ok());
  REQUIRE(mem.CreateKey("unused", 10, "").ok());
  RouterFixture f(mem, 65s);
  REQUIRE(f.Call(http::verb::get, "/seq/order?count=5").result() == http::status::ok);

  ApiRouter::Response res = f.Call(http::verb::get, "/");
  CHECK(res.result() == http::status::ok);
  CHECK(Header(res, http::field::content_type) == "text/html; charset=utf-8");
  const std::string& page = res.body();
  CHECK(Contains(page, ">order<"));
  CHECK(Contains(page, "orders &lt;main&gt;"));
  CHECK(Contains(page, ">unused<"));
  CHECK(Contains(page, "next 6"));  // IDs 1..5 handed out
  CHECK(Contains(page, "<b id=\"version\">9.9.9</b>"));
  CHECK(Contains(page, "1m 5s"));
  CHECK(Contains(page, ">store up<"));

  for (http::verb m : {http::verb::post, http::verb::delete_}) {
    ApiRouter::Response r = f.Call(m, "/");
    CHECK(r.result() == http::status::method_not_allowed);
    CHECK(r[http::field::allow] == "GET");
  }
  CHECK(f.Call(http::verb::head, "/").result() == http::status::ok);  // HEAD is GET
}

TEST_CASE("status page: GET / with the store down answers 200 with the public message only") {
  FailingSegmentStore broken = BrokenStore();
  RouterFixture f(broken, 65s);
  ApiRouter::Response res = f.Call(http::verb::get, "/");
  CHECK(res.result() == http::status::ok);
  CHECK(Header(res, http::field::content_type) == "text/html; charset=utf-8");
  CHECK(Contains(res.body(), "id=\"store-down\""));
  CHECK(Contains(res.body(), "internal error"));
  CHECK_FALSE(Contains(res.body(), "hunter2"));
  CHECK_FALSE(Contains(res.body(), "db.internal"));
}

namespace {

// Groups home, b and c at version 42: shard 3 in b; 4 in b moving to c
// (copying); 7 at home moving to b (sealed); 9 moved to c, its old rows in
// b not yet deleted (cleanup). This instance's mover runs shard 7's delta.
PlacementView MovingPlacement() {
  PlacementView v;
  v.groups = {"home", "b", "c"};
  auto map = std::make_shared<PlacementMap>();
  map->version = 42;
  map->rows = {PlacementRow{3, "b", "", ""}, PlacementRow{4, "b", "c", "copying"},
               PlacementRow{7, "home", "b", "sealed"}, PlacementRow{9, "c", "b", "cleanup"}};
  v.map = std::move(map);
  v.mover.running = true;
  v.mover.shard = 7;
  v.mover.from = "home";
  v.mover.to = "b";
  v.mover.phase = "delta";
  v.mover.rows_copied = 1234;
  return v;
}

// The placement section of `page` (from its heading to the next one).
std::string PlacementPart(const std::string& page) {
  const size_t at = page.find("<h2>Store groups</h2>");
  if (at == std::string::npos) return "";
  return page.substr(at, page.find("<h2>", at + 1) - at);
}

}  // namespace

TEST_CASE("status page: store groups show the version, shards away from home, moves and mover") {
  StatusPageInput in = UpInput();
  CHECK(PlacementPart(RenderStatusPage(in)).empty());  // no store groups: no section
  CHECK_FALSE(Contains(RenderStatusPage(in), "id=\"placement\""));

  in.placement = MovingPlacement();
  std::string part = PlacementPart(RenderStatusPage(in));
  REQUIRE_FALSE(part.empty());
  CHECK(Contains(part, "id=\"placement\""));
  CHECK(Contains(part, "3 groups (home home)"));
  CHECK(Contains(part, "placement version 42"));
  // copying and sealed are moves in progress; cleanup is a move done.
  CHECK(Contains(part, "2 moves in progress"));
  // Shards by the group that serves them; the home group is not listed.
  CHECK(Contains(part, "b: 2 shards"));
  CHECK(Contains(part, "c: 1 shards"));
  CHECK_FALSE(Contains(part, "home: "));
  CHECK(Contains(part,
                 "this instance's mover: moving, shard 7 home &rarr; b delta, "
                 "1234 rows copied"));
  CHECK_FALSE(Contains(part, "pause"));

  // Done: idle, with the pause it measured.
  in.placement->mover.running = false;
  in.placement->mover.phase = "done";
  in.placement->mover.pause_ms = 1023;
  part = PlacementPart(RenderStatusPage(in));
  CHECK(Contains(part, "this instance's mover: idle, shard 7 home &rarr; b done"));
  CHECK(Contains(part, "pause 1023 ms"));

  // A mover that never ran: idle, nothing more.
  in.placement->mover = MoverStatus{};
  part = PlacementPart(RenderStatusPage(in));
  CHECK(Contains(part, "this instance's mover: idle</p>"));

  // Names from the placement rows and the mover are escaped.
  in.placement->mover.phase = "copying";
  in.placement->mover.from = "<script>";
  in.placement->groups = {"h&1", "b"};
  part = PlacementPart(RenderStatusPage(in));
  CHECK(Contains(part, "(home h&amp;1)"));
  CHECK(Contains(part, "&lt;script&gt; &rarr;"));
  CHECK_FALSE(Contains(part, "<script>"));
}

TEST_CASE("status page: GET / through ApiRouter shows the store groups' placement") {
  MemoryStore mem;
  FakePlacement placement;
  placement.view = MovingPlacement();
  RouterFixture f(mem, 65s, KeyRules(), &placement);
  ApiRouter::Response res = f.Call(http::verb::get, "/");
  CHECK(res.result() == http::status::ok);
  const std::string part = PlacementPart(res.body());
  CHECK(Contains(part, "placement version 42"));
  CHECK(Contains(part, "2 moves in progress"));
  CHECK(Contains(part, "shard 7 home &rarr; b delta"));

  // The page reads the view anew each time.
  placement.view.map = std::make_shared<PlacementMap>(PlacementMap{43, {}});
  placement.view.mover = MoverStatus{};
  const std::string later = PlacementPart(f.Call(http::verb::get, "/").body());
  CHECK(Contains(later, "placement version 43"));
  CHECK(Contains(later, "0 moves in progress"));
  CHECK(placement.moves.empty());  // showing the page moves nothing

  // Without store groups: no section.
  RouterFixture plain(mem, 65s);
  CHECK(PlacementPart(plain.Call(http::verb::get, "/").body()).empty());
}
