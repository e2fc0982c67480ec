// Admin operations on leaf_alloc rows, run on the database runner.
//
// Thread safety: every method is safe from any thread and returns at once;
// `done` runs exactly once and must not block: on the calling thread when
// the arguments are refused (bad key, step, limit or description), else on
// a database runner thread with the store's answer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "storage/segment_store.h"

namespace seqd {

inline constexpr size_t kMaxDescriptionLength = 256;
inline constexpr size_t kMaxListLimit = 1000;

class KeyAdmin {
 public:
  template <typename T>
  using Callback = std::function<void(Result<T>)>;

  // All references must outlive this object.
  KeyAdmin(SegmentStore& store, TaskRunner& db, SegmentAllocator& allocator)
      : store_(store), db_(db), allocator_(allocator) {}

  // Rows with key > after, at most `limit` (1..kMaxListLimit). Reserved keys
  // (KeyIsReserved) are never listed; every other call refuses them as a
  // bad key (KeyRules::ValidateClientKey).
  void ListKeys(std::string after, size_t limit, Callback<std::vector<KeyRow>> done);
  void GetKey(std::string key, Callback<KeyRow> done);
  // Validates key, step (1..max_step) and description (<= 256 bytes).
  void CreateKey(std::string key, int64_t step, std::string description, Callback<KeyRow> done);
  // Validates step (1..max_step) and updates the in-memory key too.
  void SetStep(std::string key, int64_t step, Callback<KeyRow> done);
  // Round trip to the store (readiness).
  void CheckStore(std::function<void(Status)> done);

 private:
  Status ValidateStep(int64_t step) const;

  SegmentStore& store_;
  TaskRunner& db_;
  SegmentAllocator& allocator_;
};

}  // namespace seqd
