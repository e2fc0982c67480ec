// MysqlStore writes new rows as SQL text (storage/mysql/mysql_reserve_many.cc:
// utf8mb4 hex literals, not bound parameters): quotes, backslashes, a NUL
// and non-ASCII in keys and descriptions are data, created by ReserveMany
// and by CreateKeys alike, and more rows than one statement takes. On a
// server whose default character set is latin1 (galera_short's nodes), the
// table gets the characters (ü), not their UTF-8 bytes.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "conformance_support.h"
#include "storage/mysql/mysql_store.h"

namespace seqd {
namespace {

using conformance::TestMysqlOptions;
using conformance::UniqueName;

void CheckRange(const Result<ReservedSegment>& r, int64_t first, int64_t last) {
  REQUIRE_OK(r);
  CHECK(r->first == first);
  CHECK(r->last == last);
}

}  // namespace

TEST_SUITE("mariadb_pool") {
  TEST_CASE("mariadb: MysqlStore: odd bytes in keys and descriptions are data in its SQL text") {
    MysqlStore store(TestMysqlOptions());
    REQUIRE_OK(store.EnsureSchema());
    const std::string odd = UniqueName("text-sql") + "-o'k\\\"e;y)--";
    const std::string description = std::string("it's \\' ") + '\0' + " -- ü";
    auto created = store.ReserveMany({ReserveRequest{odd, std::nullopt, {}, 3, description},
                                      ReserveRequest{odd + "b", std::nullopt, {}, 3, "plain"}});
    REQUIRE(created.size() == 2);
    CheckRange(created[0], 1, 3);
    CheckRange(created[1], 1, 3);
    REQUIRE_OK(store.CreateKeys({NewKey{odd + "2", 5}}, description));
    for (const std::string& k : {odd, odd + "2"}) {
      auto row = store.GetKey(k);
      REQUIRE_OK(row);
      CHECK(row->key == k);
      CHECK(row->description == description);
    }
    // The same key again: the row exists, the statement advances it.
    auto again = store.ReserveMany({ReserveRequest{odd, std::nullopt, {}, 3, description}});
    REQUIRE(again.size() == 1);
    CheckRange(again[0], 4, 6);
  }
}

}  // namespace seqd
