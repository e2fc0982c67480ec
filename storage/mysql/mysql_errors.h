// What a MySQL/MariaDB error code means to the stores: a lost connection,
// a transient refusal, a conflict worth running the transaction again, or
// no answer from the server at all; and the Error a store reports for an
// exception (storage/mysql/mysql_pool.h's header comment says which code
// becomes which ErrorCode).
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "common/error.h"

namespace sql {
class SQLException;
}  // namespace sql

namespace seqd {

constexpr int kMysqlErrDupKey = 1062;                 // ER_DUP_ENTRY
constexpr int kMysqlErrDupFieldName = 1060;           // ER_DUP_FIELDNAME
constexpr int kMysqlErrDeadlock = 1213;               // ER_LOCK_DEADLOCK
constexpr int kMysqlErrLockWaitTimeout = 1205;        // ER_LOCK_WAIT_TIMEOUT
constexpr int kMysqlErrUnknownSystemVariable = 1193;  // ER_UNKNOWN_SYSTEM_VARIABLE

// A value the column cannot hold: too long (1406, ER_DATA_TOO_LONG), or
// characters outside its character set (1366, ER_TRUNCATED_WRONG_VALUE_FOR_FIELD;
// 1267, 1270 and 1271: an illegal mix of two, three or more collations). Only tables created before
// keys could be any UTF-8 (a Leaf table, an older seqd's) have such columns.
bool MysqlValueDoesNotFit(int code);

// The message for a key, conversation or user id that a table's column
// cannot hold (MysqlValueDoesNotFit), or that names another key's row
// under a column that folds case or pads spaces: kInvalidArgument, with
// no table or column named.
Error KeyDoesNotFitError();
Error KeyFoldsOntoAnotherError();

// The connection itself is unusable.
bool MysqlConnectionLost(int code);

// The server answered, but the store cannot serve right now (too many
// connections, a lock wait, a deadlock, a read-only server, the schema
// not created yet).
bool MysqlTransient(int code);

// The transaction was rolled back because of another transaction: running
// it again may succeed. Galera reports a certification conflict as 1213 at
// COMMIT; 1205 (lock wait timeout) rolls back only the statement, the pool
// the rest.
bool MysqlConflict(int code);

// The server never answered (a client-side error, or the connection died).
bool MysqlNoServerAnswer(int code);

// " (MySQL error N, SQLSTATE S)": what a store's message says of `e`.
std::string MysqlCodeSuffix(const sql::SQLException& e);

// The Error of `e` raised by `op`: `duplicate_key` for 1062 if set,
// kStoreUnavailable for a lost connection (`lost`, or the code says so) or
// a transient refusal, KeyDoesNotFitError() for a value that does not fit,
// else kInternal.
Error MysqlExceptionError(const sql::SQLException& e, const std::string& op, bool lost,
                          const std::optional<ErrorCode>& duplicate_key);

}  // namespace seqd
