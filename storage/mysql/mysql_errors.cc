#include "storage/mysql/mysql_errors.h"

#include <cppconn/exception.h>

namespace seqd {

bool MysqlConnectionLost(int code) {
  switch (code) {
    case 1047:  // ER_UNKNOWN_COM_ERROR: a Galera node out of the primary component
                // ("WSREP has not yet prepared node for application use")
    case 1053:  // ER_SERVER_SHUTDOWN
    case 1927:  // ER_CONNECTION_KILLED (MariaDB)
    case 2002:  // CR_CONNECTION_ERROR
    case 2003:  // CR_CONN_HOST_ERROR
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2011:  // CR_TCP_CONNECTION
    case 2013:  // CR_SERVER_LOST
    case 2026:  // CR_SSL_CONNECTION_ERROR
    case 2027:  // CR_MALFORMED_PACKET
    case 2048:  // CR_INVALID_CONN_HANDLE
    case 2055:  // CR_SERVER_LOST_EXTENDED
    case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8)
      return true;
    default:
      return false;
  }
}

bool MysqlTransient(int code) {
  switch (code) {
    case 1040:  // ER_CON_COUNT_ERROR
    case 1203:  // ER_TOO_MANY_USER_CONNECTIONS
    case 1205:  // ER_LOCK_WAIT_TIMEOUT
    case 1213:  // ER_LOCK_DEADLOCK
    case 1290:  // ER_OPTION_PREVENTS_STATEMENT (read-only replica)
    case 1792:  // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    case 1836:  // ER_READ_ONLY_MODE
    case 1146:  // ER_NO_SUCH_TABLE: the background schema step has not run yet
      return true;
    default:
      return false;
  }
}

bool MysqlConflict(int code) {
  return code == kMysqlErrDeadlock || code == kMysqlErrLockWaitTimeout;
}

bool MysqlNoServerAnswer(int code) {
  return code == 0 || (code >= 2000 && code < 3000) || MysqlConnectionLost(code);
}

std::string MysqlCodeSuffix(const sql::SQLException& e) {
  const std::string& state = e.getSQLState();
  return " (MySQL error " + std::to_string(e.getErrorCode()) +
         (state.empty() ? std::string() : ", SQLSTATE " + state) + ")";
}

bool MysqlValueDoesNotFit(int code) {
  return code == 1406 || code == 1366 || code == 1267 || code == 1270 || code == 1271;
}

Error KeyDoesNotFitError() {
  return MakeError(ErrorCode::kInvalidArgument,
                   "the database cannot store this id: its table was created for shorter or "
                   "plainer ids (docs/operations.md, \"Keys in MySQL\")");
}

Error KeyFoldsOntoAnotherError() {
  return MakeError(ErrorCode::kInvalidArgument,
                   "an id that differs from this one only in case or trailing spaces is stored "
                   "already, and the database's table cannot tell them apart (docs/operations.md, "
                   "\"Keys in MySQL\")");
}

Error MysqlExceptionError(const sql::SQLException& e, const std::string& op, bool lost,
                          const std::optional<ErrorCode>& duplicate_key) {
  const int code = e.getErrorCode();
  ErrorCode ec = ErrorCode::kInternal;
  if (code == kMysqlErrDupKey && duplicate_key) {
    ec = *duplicate_key;
  } else if (lost || MysqlConnectionLost(code) || MysqlTransient(code)) {
    ec = ErrorCode::kStoreUnavailable;
  } else if (MysqlValueDoesNotFit(code)) {
    return KeyDoesNotFitError();
  }
  return MakeError(ec, op + ": " + e.what() + MysqlCodeSuffix(e));
}

}  // namespace seqd
