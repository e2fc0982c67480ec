#include "storage/message_store.h"

namespace seqd {

std::string_view MessageStatusName(MessageStatus status) {
  switch (status) {
    case MessageStatus::kNormal:
      return "normal";
    case MessageStatus::kRecalled:
      return "recalled";
    case MessageStatus::kDeleted:
      return "deleted";
  }
  return "normal";
}

namespace message_store {

Status CheckRange(const RangeQuery& query) {
  if (query.from_seq > query.to_seq || query.limit == 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "get range: REQUIRES from_seq <= to_seq and limit >= 1");
  }
  return OkStatus();
}

Status CheckNewStatus(MessageStatus status) {
  if (status == MessageStatus::kNormal) {
    return MakeError(ErrorCode::kInvalidArgument, "set status: REQUIRES status != normal");
  }
  return OkStatus();
}

bool ContentDiffers(const MessageFields& request, int32_t stored_content_type,
                    std::string_view stored_payload, MessageStatus stored_status) {
  if (stored_status != MessageStatus::kNormal) return false;
  return request.content_type != stored_content_type || request.payload != stored_payload;
}

}  // namespace message_store
}  // namespace seqd
