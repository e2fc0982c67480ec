// The text of an Error that anyone outside the process may read.
//
// Thread safety: a pure function.
#pragma once

#include <string>

#include "common/error.h"

namespace seqd {

// What clients, admin routes and the status page may show of `error`: its
// message, except for kInternal and kStoreUnavailable, whose messages may
// name the store's user, host, port or schema and become a fixed text.
// Logs nothing: the full message is for the log only (service/
// wire_errors.h's PublicMessage logs it, rate-limited).
std::string ClientSafeMessage(const Error& error);

}  // namespace seqd
