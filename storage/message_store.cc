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

}  // namespace seqd
