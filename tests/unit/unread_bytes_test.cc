// UnreadBytes and UnreadShare (server/net/unread_bytes.h): an address is
// judged by its own unread bytes, unmatched removes are harmless, limit 0
// never refuses, and a connection's share is settled when it ends.
#include "server/net/unread_bytes.h"

#include <doctest/doctest.h>

namespace seqd {
namespace {

TEST_CASE("an address is over its limit by its own unread bytes, not others'") {
  UnreadBytes unread(100);
  unread.Add("10.0.0.1", 60);
  unread.Add("10.0.0.2", 60);
  CHECK(unread.total() == 120);  // together over the limit
  CHECK_FALSE(unread.Over("10.0.0.1"));
  CHECK_FALSE(unread.Over("10.0.0.2"));
  unread.Add("10.0.0.1", 40);
  CHECK(unread.Over("10.0.0.1"));  // at the limit
  CHECK_FALSE(unread.Over("10.0.0.2"));
  CHECK_FALSE(unread.Over("10.0.0.3"));
  unread.Remove("10.0.0.1", 1);
  CHECK_FALSE(unread.Over("10.0.0.1"));
  unread.Remove("10.0.0.1", 99);
  unread.Remove("10.0.0.2", 60);
  CHECK(unread.total() == 0);
  CHECK(unread.of("10.0.0.1") == 0);
}

TEST_CASE("a Remove with nothing added changes nothing") {
  UnreadBytes unread(100);
  unread.Remove("10.0.0.1", 50);
  unread.Add("10.0.0.2", 10);
  unread.Remove("10.0.0.2", 50);  // more than added: down to zero, not below
  CHECK(unread.total() == 0);
  unread.Add("10.0.0.2", 100);
  CHECK(unread.Over("10.0.0.2"));
}

TEST_CASE("limit 0: never over") {
  UnreadBytes unread(0);
  unread.Add("10.0.0.1", size_t{1} << 40);
  CHECK_FALSE(unread.Over("10.0.0.1"));
}

TEST_CASE("a connection's share is settled when it ends") {
  UnreadBytes unread(100);
  {
    UnreadShare a(unread), b(unread);
    a.set_peer("10.0.0.1");
    b.set_peer("10.0.0.1");
    a.Owe(70);
    CHECK_FALSE(b.Over());
    b.Owe(30);
    CHECK(a.Over());
    b.Settle();
    CHECK_FALSE(a.Over());
    CHECK(unread.of("10.0.0.1") == 70);
    b.Owe(50);
  }
  CHECK(unread.total() == 0);
}

TEST_CASE("OweExactly moves a share up and down to what is unread now") {
  UnreadBytes unread(100);
  {
    UnreadShare a(unread);
    a.set_peer("10.0.0.1");
    a.OweExactly(60);
    CHECK(unread.of("10.0.0.1") == 60);
    a.OweExactly(120);  // more answers behind the same write
    CHECK(unread.of("10.0.0.1") == 120);
    CHECK(a.Over());
    a.OweExactly(20);  // part of it taken
    CHECK(unread.of("10.0.0.1") == 20);
    CHECK_FALSE(a.Over());
    a.OweExactly(20);
    CHECK(unread.of("10.0.0.1") == 20);
    a.OweExactly(0);
    CHECK(unread.total() == 0);
    a.OweExactly(40);
  }
  CHECK(unread.total() == 0);  // the rest settled when it ended
}

}  // namespace
}  // namespace seqd
