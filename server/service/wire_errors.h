// The one table from core errors to what each interface answers: the HTTP
// status, the binary protocol's status, the RESP error text and the metric
// `status` label. Every listener maps errors through here and nowhere else.
//
// What a client may read: PublicMessage(). The text of kInternal and
// kStoreUnavailable is never shown ("internal error", "store unavailable,
// retry later"; the real message goes to the log): it may come from the
// store and name its user, host, port or schema.
//
// Thread safety: pure functions over a constant table.
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"
#include "proto/binary_codec.h"

namespace seqd {

struct WireErrorRow {
  ErrorCode code;
  unsigned http_status;           // e.g. 404
  proto::Status binary;           // the binary protocol's status
  std::string_view resp_text;     // RESP error text; empty: the public message
  std::string_view metric_label;  // the `status` label (= ErrorCodeName)
};

// The row of `code`.
const WireErrorRow& WireErrorFor(ErrorCode code);

// The message a client may see: `error.message`, except for kInternal and
// kStoreUnavailable, which are logged (store errors at most once a second)
// and answered with a fixed text.
std::string PublicMessage(const Error& error);

// The binary protocol's status and message for `error`.
struct BinaryError {
  proto::Status status;
  std::string message;
};
BinaryError ToBinaryError(const Error& error);

// The RESP error reply text (without "-" and CRLF) for `error`.
std::string RespErrorText(const Error& error);

}  // namespace seqd
