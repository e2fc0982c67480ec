// How a MySQL/MariaDB table's key column compares the keys it holds. The
// tables seqd creates keep keys as VARBINARY: byte for byte, so "A" and
// "a", or "a" and "a ", are two keys. A table made before (Leaf's own
// leaf_alloc, an older seqd's message tables) may fold case and pad
// trailing spaces; the stores then make sure no key is served from
// another key's row (docs/operations.md, "Keys in MySQL").
//
// Thread safety: pure functions over the connection given.
#pragma once

#include <string_view>

#include "storage/mysql/mysql_pool.h"

namespace seqd {

// True if `table`.`column` of the connection's database compares byte for
// byte with no padding: VARBINARY, or a NO PAD binary collation
// (MariaDB's *_nopad_bin, MySQL's utf8mb4_0900_bin). False for any other
// type or collation, or if the column is not there.
// REQUIRES: run inside MysqlPool::Run. Throws sql::SQLException.
bool KeyColumnIsExact(MysqlConn& c, std::string_view table, std::string_view column);

// True if `collation` (as information_schema names it) compares byte for
// byte with no padding.
bool CollationIsExact(std::string_view data_type, std::string_view collation);

}  // namespace seqd
