// The per-address budget of failed authentications (server/auth/
// auth_failures.h) on a fake clock: a block after the budget, its backoff
// doubling up to the cap and forgiven after a quiet spell, addresses told
// apart without their ports (IPv6 too), the table's bound; and IdentifyBy
// refusing a right secret from a blocked address with the throttled error.
#include "server/auth/auth_failures.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "server/auth/access.h"
#include "server/base/manual_clock.h"

namespace seqd {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

AuthFailureOptions Small(int budget = 3) {
  AuthFailureOptions o;
  o.budget = budget;
  return o;
}

}  // namespace

TEST_CASE("auth failures: the port is not part of the address") {
  CHECK(AuthFailures::AddressOf("10.0.0.7:51522") == "10.0.0.7");
  CHECK(AuthFailures::AddressOf("::1:51522") == "::1");
  CHECK(AuthFailures::AddressOf("[2001:db8::1]:80") == "2001:db8::1");
  CHECK(AuthFailures::AddressOf("::ffff:10.0.0.7:80") == "::ffff:10.0.0.7");
  CHECK(AuthFailures::AddressOf("") == "");
}

TEST_CASE("auth failures: blocked at the budget, for a backoff that doubles up to its cap") {
  ManualClock clock;
  AuthFailures f(Small(3), &clock);
  CHECK_FALSE(f.RecordFailure("10.0.0.7:1"));
  CHECK_FALSE(f.RecordFailure("10.0.0.7:2"));
  CHECK(f.BlockedFor("10.0.0.7:3") == 0);
  CHECK(f.RecordFailure("10.0.0.7:3"));  // the third, from another port: blocked
  CHECK(f.BlockedFor("10.0.0.7:4") == 1);
  CHECK(f.BlockedFor("10.0.0.8:4") == 0);  // other addresses are not
  clock.Advance(seconds(1));
  CHECK(f.BlockedFor("10.0.0.7:4") == 0);
  // The next blocks last 2, 4, ... s, up to 60 s.
  int expected[] = {2, 4, 8, 16, 32, 60, 60};
  for (int want : expected) {
    for (int i = 0; i < 2; ++i) CHECK_FALSE(f.RecordFailure("10.0.0.7:5"));
    CHECK(f.RecordFailure("10.0.0.7:5"));
    CHECK(f.BlockedFor("10.0.0.7:5") == want);
    // Failures while blocked do not count (they are refused before).
    CHECK_FALSE(f.RecordFailure("10.0.0.7:5"));
    clock.Advance(seconds(want) - milliseconds(1));
    CHECK(f.BlockedFor("10.0.0.7:5") == 1);
    clock.Advance(milliseconds(1));
    CHECK(f.BlockedFor("10.0.0.7:5") == 0);
  }
  // A quiet minute forgives: the next block is 1 s again.
  clock.Advance(seconds(60));
  for (int i = 0; i < 2; ++i) CHECK_FALSE(f.RecordFailure("10.0.0.7:5"));
  CHECK(f.RecordFailure("10.0.0.7:5"));
  CHECK(f.BlockedFor("10.0.0.7:5") == 1);
}

TEST_CASE("auth failures: the budget is per window; 0 never blocks; Reset forgets") {
  ManualClock clock;
  AuthFailures f(Small(3), &clock);
  for (int i = 0; i < 10; ++i) {
    CHECK_FALSE(f.RecordFailure("::1:9"));
    clock.Advance(seconds(6));  // two per 10 s window at most
  }
  CHECK(f.BlockedFor("::1:9") == 0);
  AuthFailures off(Small(0), &clock);
  for (int i = 0; i < 100; ++i) CHECK_FALSE(off.RecordFailure("::1:9"));
  CHECK(off.BlockedFor("::1:9") == 0);
  for (int i = 0; i < 3; ++i) f.RecordFailure("::1:9");
  CHECK(f.BlockedFor("::1:9") == 1);
  f.Reset();
  CHECK(f.BlockedFor("::1:9") == 0);
  CHECK(f.size() == 0);
}

TEST_CASE("auth failures: the table is bounded, expired entries dropped first") {
  ManualClock clock;
  AuthFailureOptions o = Small(2);
  o.max_addresses = 4;
  AuthFailures f(o, &clock);
  f.RecordFailure("10.0.0.1:1");
  f.RecordFailure("10.0.0.1:1");  // blocked
  for (int i = 2; i <= 4; ++i) f.RecordFailure("10.0.0." + std::to_string(i) + ":1");
  CHECK(f.size() == 4);
  clock.Advance(seconds(61));  // everything expired
  f.RecordFailure("10.0.0.9:1");
  CHECK(f.size() == 1);
  for (int i = 10; i < 100; ++i) f.RecordFailure("10.0.0." + std::to_string(i) + ":1");
  CHECK(f.size() <= 4);
}

TEST_CASE("auth failures: IdentifyBy counts wrong secrets and refuses any while blocked") {
  const std::string path = "/tmp/seqd_auth_failures_test_" + std::to_string(::getpid());
  std::ofstream(path, std::ios::trunc) << "ops " << DigestHex(Sha256("right-secret")) << " admin\n";
  auto auth = Authenticator::FromFile(path);
  std::remove(path.c_str());
  REQUIRE(auth);
  Authenticator& a = **auth;
  a.failures().Configure(Small(3));
  int failures = 0, throttled = 0;
  a.failures().SetHooks({[&] { ++failures; }, [&](std::string_view) { ++throttled; }});
  // No secret is not a failure.
  CHECK(IdentifyBy(&a, "", "http", "127.0.0.1:1").throttled() == 0);
  for (int i = 0; i < 3; ++i) {
    Access x = IdentifyBy(&a, "wrong", "resp", "127.0.0.1:2");
    CHECK(x.principal() == nullptr);
    CHECK(x.throttled() == 0);
  }
  CHECK(failures == 3);
  Access blocked = IdentifyBy(&a, "right-secret", "binary", "127.0.0.1:3");
  CHECK(blocked.principal() == nullptr);
  CHECK(blocked.throttled() == 1);
  CHECK(throttled == 1);
  Status s = blocked.Check(Permission::kIds, "k");
  REQUIRE_FALSE(s);
  CHECK(s.error().code == ErrorCode::kResourceExhausted);
  CHECK(s.error().message == "too many failed authentications from this address; retry in 1 s");
  // Another address still gets in.
  CHECK(IdentifyBy(&a, "right-secret", "binary", "127.0.0.2:3").principal() != nullptr);
  // An open server has no budget.
  for (int i = 0; i < 10; ++i) CHECK(IdentifyBy(nullptr, "x", "http", "127.0.0.1:1").principal());
}

}  // namespace seqd
