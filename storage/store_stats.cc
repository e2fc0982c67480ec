#include "storage/store_stats.h"

namespace seqd {

std::string_view CommitFailureName(CommitFailure f) {
  switch (f) {
    case CommitFailure::kConflict:
      return "conflict";
    case CommitFailure::kLost:
      return "lost";
    case CommitFailure::kTimeout:
      return "timeout";
    case CommitFailure::kOther:
      break;
  }
  return "other";
}

StoreStats& ProcessStoreStats() {
  static StoreStats stats;
  return stats;
}

}  // namespace seqd
