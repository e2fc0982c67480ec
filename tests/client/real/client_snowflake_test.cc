// The client's snowflake calls against the real BinaryServer and
// SnowflakeGenerator (in-process, see snowflake_world.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "seqd/client.h"
#include "tests/client/real/snowflake_world.h"

using namespace std::chrono_literals;
using seqd::client::StatusCode;
using seqd::clienttest::SnowflakeWorld;

namespace {

seqd::client::ClientOptions Endpoints(std::vector<uint16_t> ports) {
  seqd::client::ClientOptions o;
  for (uint16_t p : ports) o.endpoints.push_back("127.0.0.1:" + std::to_string(p));
  o.call_timeout = 3000ms;
  o.backoff_initial = 5ms;
  o.backoff_max = 50ms;
  return o;
}

}  // namespace

TEST_CASE("client snowflake: IDs from the real server decode to its worker and time") {
  SnowflakeWorld w;
  w.Grant(9);
  seqd::client::Client c(Endpoints({w.port()}));
  auto ids = c.NextSnowflake(10);
  REQUIRE_MESSAGE(ids.ok(), ids.ToString());
  REQUIRE(ids->size() == 10);
  for (size_t i = 0; i < ids->size(); ++i) {
    auto d = c.DecodeSnowflake((*ids)[i]);
    REQUIRE_MESSAGE(d.ok(), d.ToString());
    CHECK(*d == seqd::client::DecodedSnowflake{SnowflakeWorld::kNowMs, 9, static_cast<int64_t>(i)});
  }
  auto next = c.NextSnowflake();
  REQUIRE(next.ok());
  REQUIRE(next->size() == 1);
  CHECK(next->front() > ids->back());
  CHECK(c.NextSnowflake(SnowflakeWorld::kMaxCount)->size() == SnowflakeWorld::kMaxCount);
}

TEST_CASE("client snowflake: the real server's argument errors") {
  SnowflakeWorld w;
  w.Grant(1);
  seqd::client::Client c(Endpoints({w.port()}));
  CHECK(c.NextSnowflake(0).code() == StatusCode::kInvalidArgument);
  auto over = c.NextSnowflake(SnowflakeWorld::kMaxCount + 1);
  CHECK(over.code() == StatusCode::kInvalidArgument);
  CHECK(over.message().find(std::to_string(SnowflakeWorld::kMaxCount)) != std::string::npos);
  CHECK(c.DecodeSnowflake(-1).code() == StatusCode::kInvalidArgument);
  CHECK(c.NextSnowflake(1).ok());  // the connection is fine
}

TEST_CASE("client snowflake: a server without a lease is skipped for one with a lease") {
  SnowflakeWorld unleased;
  SnowflakeWorld leased;
  leased.Grant(3);
  for (int i = 0; i < 2; ++i) {  // round-robin starts: one client asks `unleased` first
    seqd::client::Client c(Endpoints({unleased.port(), leased.port()}));
    for (int j = 0; j < 3; ++j) {
      auto ids = c.NextSnowflake(2);
      REQUIRE_MESSAGE(ids.ok(), ids.ToString());
      auto d = c.DecodeSnowflake(ids->front());
      REQUIRE(d.ok());
      CHECK(d->worker == 3);
    }
  }
}

TEST_CASE("client snowflake: a revoked lease is NOT_SERVING after the retries") {
  SnowflakeWorld w;
  w.Grant(2);
  seqd::client::ClientOptions o = Endpoints({w.port()});
  o.max_attempts = 2;
  seqd::client::Client c(o);
  REQUIRE(c.NextSnowflake(1).ok());
  w.Revoke("worker id lease lost");
  auto r = c.NextSnowflake(1);
  CHECK(r.code() == StatusCode::kNotServing);
  CHECK(r.message().find("worker id lease lost") != std::string::npos);
  CHECK(r.message().find("after 2 attempts") != std::string::npos);
  CHECK(c.DecodeSnowflake(1).ok());  // decoding needs no lease
}
