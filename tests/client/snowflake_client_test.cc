// The client's snowflake calls (NextSnowflake, DecodeSnowflake) against the
// fake binary-protocol server: results, retries and malformed answers.
#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <future>
#include <thread>

#include "fake_server.h"
#include "seqd/client.h"

using namespace std::chrono_literals;
using namespace seqd::client;
using namespace seqd::testing;

namespace {

bool StrictlyAscending(const std::vector<int64_t>& ids) {
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i] <= ids[i - 1]) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("snowflake client: blocking NextSnowflake and DecodeSnowflake") {
  FakeServer server;
  Client client(QuickRetryOptions({server.endpoint()}));
  ClientResult<std::vector<int64_t>> one = client.NextSnowflake();
  REQUIRE_MESSAGE(one.ok(), one.ToString());
  REQUIRE(one->size() == 1);
  ClientResult<std::vector<int64_t>> many = client.NextSnowflake(100);
  REQUIRE_MESSAGE(many.ok(), many.ToString());
  REQUIRE(many->size() == 100);
  CHECK(StrictlyAscending(*many));
  CHECK(many->front() > one->front());

  ClientResult<DecodedSnowflake> d = client.DecodeSnowflake(many->back());
  REQUIRE_MESSAGE(d.ok(), d.ToString());
  CHECK(d->worker == 7);
  CHECK(d->sequence == 100);
  CHECK(d->time_ms == 1'000'000'000 + 1288834974657);
  CHECK(server.snowflake_requests == 3);
}

TEST_CASE("snowflake client: the async calls run their callbacks once, on the executor") {
  FakeServer server;
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  {
    AsyncClient client(io.get_executor(), QuickRetryOptions({server.endpoint()}));
    std::promise<ClientResult<std::vector<int64_t>>> ids;
    std::promise<ClientResult<DecodedSnowflake>> fields;
    std::promise<std::thread::id> where;
    client.NextSnowflake(3, [&](ClientResult<std::vector<int64_t>> r) {
      where.set_value(std::this_thread::get_id());
      ids.set_value(std::move(r));
    });
    auto got = ids.get_future().get();
    REQUIRE_MESSAGE(got.ok(), got.ToString());
    CHECK(got->size() == 3);
    CHECK(where.get_future().get() == runner.get_id());
    client.DecodeSnowflake(
        got->front(), [&](ClientResult<DecodedSnowflake> r) { fields.set_value(std::move(r)); });
    auto f = fields.get_future().get();
    REQUIRE_MESSAGE(f.ok(), f.ToString());
    CHECK(f->worker == 7);
    CHECK(f->sequence == 0);
  }
  work.reset();
  runner.join();
}

TEST_CASE("snowflake client: NOT_SERVING moves the call to the next endpoint") {
  FakeServer unleased(FakeOptions{.not_serving_first = 1000});
  FakeServer live;
  // Clients start at a round-robin position: over two clients, at least one
  // asks the server without a lease first.
  for (int i = 0; i < 2; ++i) {
    Client client(QuickRetryOptions({unleased.endpoint(), live.endpoint()}));
    for (int j = 0; j < 3; ++j) {
      auto r = client.NextSnowflake(2);
      REQUIRE_MESSAGE(r.ok(), r.ToString());
      CHECK(r->size() == 2);
    }
  }
  CHECK(unleased.snowflake_requests >= 1);
  CHECK(live.snowflake_requests == 6);
}

TEST_CASE("snowflake client: NOT_SERVING on every attempt is reported, after the retries") {
  FakeServer server(FakeOptions{.not_serving_first = 1000});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 3;
  Client client(o);
  auto r = client.NextSnowflake(1);
  CHECK(r.code() == StatusCode::kNotServing);
  CHECK(r.message().find("no worker id leased yet") != std::string::npos);
  CHECK(r.message().find("after 3 attempts") != std::string::npos);
  CHECK(server.snowflake_requests == 3);
}

TEST_CASE("snowflake client: a NOT_SERVING that clears is retried to success") {
  FakeServer server(FakeOptions{.not_serving_first = 2});
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 3;
  Client client(o);
  auto r = client.NextSnowflake(4);
  REQUIRE_MESSAGE(r.ok(), r.ToString());
  CHECK(r->size() == 4);
  CHECK(server.snowflake_requests == 3);
}

TEST_CASE("snowflake client: INVALID_ARGUMENT is not retried") {
  FakeServer server;
  ClientOptions o = QuickRetryOptions({server.endpoint()});
  o.max_attempts = 5;
  Client client(o);
  CHECK(client.NextSnowflake(0).code() == StatusCode::kInvalidArgument);
  CHECK(client.NextSnowflake(5000).code() == StatusCode::kInvalidArgument);
  CHECK(client.DecodeSnowflake(-1).code() == StatusCode::kInvalidArgument);
  CHECK(server.snowflake_requests == 3);
}

TEST_CASE("snowflake client: a result of the wrong length or order is a PROTOCOL error") {
  SUBCASE("one ID short") {
    FakeServer server(FakeOptions{.snowflake_short = true});
    Client client(QuickRetryOptions({server.endpoint()}));
    auto r = client.NextSnowflake(3);
    CHECK(r.code() == StatusCode::kProtocol);
    CHECK(r.message() == "malformed SNOWFLAKE result");
  }
  SUBCASE("descending") {
    FakeServer server(FakeOptions{.snowflake_unsorted = true});
    Client client(QuickRetryOptions({server.endpoint()}));
    CHECK(client.NextSnowflake(3).code() == StatusCode::kProtocol);
    CHECK(client.NextSnowflake(1).ok());  // one ID is trivially in order
  }
}

TEST_CASE("snowflake client: Close cancels a pending call") {
  FakeServer server(FakeOptions{.delay_ms = 500});
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  {
    AsyncClient client(io.get_executor(), QuickRetryOptions({server.endpoint()}));
    std::promise<ClientResult<std::vector<int64_t>>> result;
    client.NextSnowflake(
        1, [&](ClientResult<std::vector<int64_t>> r) { result.set_value(std::move(r)); });
    client.Close();
    CHECK(result.get_future().get().code() == StatusCode::kCancelled);
  }
  work.reset();
  runner.join();
}
