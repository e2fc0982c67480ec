// The one error table: every ErrorCode has a row, and each interface's
// answer for it comes from that row.
#include "server/service/wire_errors.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "server/metrics/metrics.h"

namespace seqd {

TEST_CASE("wire errors: one row per code, consistent with the names and the metric labels") {
  const ErrorCode all[] = {
      ErrorCode::kInvalidArgument,    ErrorCode::kUnknownKey,   ErrorCode::kKeyExists,
      ErrorCode::kStoreUnavailable,   ErrorCode::kShuttingDown, ErrorCode::kNotFound,
      ErrorCode::kFailedPrecondition, ErrorCode::kTooLarge,     ErrorCode::kNotServing,
      ErrorCode::kMessageIdConflict,  ErrorCode::kInternal};
  const auto& statuses = Metrics::Statuses();
  for (ErrorCode c : all) {
    CAPTURE(ErrorCodeName(c));
    const WireErrorRow& row = WireErrorFor(c);
    CHECK(row.code == c);
    CHECK(row.metric_label == ErrorCodeName(c));
    CHECK(std::find(statuses.begin(), statuses.end(), row.metric_label) != statuses.end());
    CHECK(row.http_status >= 400);
    CHECK(row.http_status < 600);
  }
  CHECK(WireErrorFor(ErrorCode::kUnknownKey).http_status == 404);
  CHECK(WireErrorFor(ErrorCode::kStoreUnavailable).http_status == 503);
  CHECK(WireErrorFor(ErrorCode::kTooLarge).binary == proto::Status::kTooLarge);
  CHECK(WireErrorFor(ErrorCode::kNotServing).binary == proto::Status::kNotServing);
}

TEST_CASE("wire errors: a message id conflict has its own code on every interface") {
  const WireErrorRow& row = WireErrorFor(ErrorCode::kMessageIdConflict);
  CHECK(row.http_status == 409);
  CHECK(row.metric_label == "message_id_conflict");
  CHECK(row.binary == proto::Status::kMessageIdConflict);
  CHECK(static_cast<int>(row.binary) == 16);
  CHECK(proto::StatusName(row.binary) == "MESSAGE_ID_CONFLICT");
  CHECK_FALSE(proto::IsProtocolError(row.binary));
  CHECK(MetricLabelFor(proto::Status::kMessageIdConflict) == "message_id_conflict");
  // No other code shares its binary status or its name.
  for (size_t c = 0; c <= static_cast<size_t>(ErrorCode::kInternal); ++c) {
    const auto code = static_cast<ErrorCode>(c);
    if (code == ErrorCode::kMessageIdConflict) continue;
    CAPTURE(ErrorCodeName(code));
    CHECK(WireErrorFor(code).binary != row.binary);
    CHECK(ErrorCodeName(code) != "message_id_conflict");
  }
  const Error e = MakeError(ErrorCode::kMessageIdConflict, "client_msg_id is already used");
  CHECK(ToBinaryError(e).message == "client_msg_id is already used");
  CHECK(RespErrorText(e) == "client_msg_id is already used");
}

TEST_CASE("wire errors: internal details never reach a client") {
  const Error e = MakeError(ErrorCode::kInternal, "mysql: secret-host:3306 exploded");
  CHECK(PublicMessage(e) == "internal error");
  CHECK(ToBinaryError(e).message == "internal error");
  CHECK(ToBinaryError(e).status == proto::Status::kInternal);
  CHECK(RespErrorText(e) == "internal error");
  const Error bad = MakeError(ErrorCode::kInvalidArgument, "key is empty");
  CHECK(RespErrorText(bad) == "invalid key: key is empty");
  CHECK(ToBinaryError(bad).message == "key is empty");
  const Error down = MakeError(ErrorCode::kStoreUnavailable, "mysql reserve: lost");
  CHECK(RespErrorText(down).find("store unavailable") == 0);
}

}  // namespace seqd
