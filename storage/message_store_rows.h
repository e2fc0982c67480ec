// Small conversions shared by the SQL MessageStores (SQLite, MySQL).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "storage/message_store.h"

namespace seqd {

// The status column's value (0 normal, 1 recalled, 2 deleted) as a
// MessageStatus; anything unknown reads as normal.
inline MessageStatus MessageStatusFromColumn(int64_t v) {
  switch (v) {
    case 1:
      return MessageStatus::kRecalled;
    case 2:
      return MessageStatus::kDeleted;
    default:
      return MessageStatus::kNormal;
  }
}

// A RangeQuery limit as an SQL LIMIT, leaving room for the +1 row that tells
// whether there are more.
inline int64_t ClampRangeLimit(size_t limit) {
  const auto max = static_cast<size_t>(std::numeric_limits<int64_t>::max() - 1);
  return static_cast<int64_t>(limit < max ? limit : max);
}

}  // namespace seqd
