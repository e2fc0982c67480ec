// Admin operations on leaf_alloc rows, run on the database runner.
//
// Thread safety: every method is safe from any thread and returns at once;
// `done` runs exactly once and must not block: on the calling thread when
// the arguments are refused (bad key, step, limit or description), else on
// a database runner thread with the store's answer.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "server/service/key_admin_api.h"
#include "storage/segment_store.h"

namespace seqd {

class KeyAdmin final : public KeyAdminApi {
 public:
  // Told each key CreateKey made, on a database runner thread; must not
  // block (the message service forgets that the key was unknown).
  using CreatedListener = std::function<void(std::string_view key)>;

  // All references must outlive this object. `on_created` is optional.
  KeyAdmin(SegmentStore& store, TaskRunner& db, SegmentAllocator& allocator,
           CreatedListener on_created = {})
      : store_(store), db_(db), allocator_(allocator), on_created_(std::move(on_created)) {}

  // KeyAdminApi (server/service/key_admin_api.h).
  void ListKeys(std::string after, size_t limit, Callback<std::vector<KeyRow>> done) override;
  void GetKey(std::string key, Callback<KeyRow> done) override;
  void CreateKey(std::string key, int64_t step, std::string description,
                 Callback<KeyRow> done) override;
  void SetStep(std::string key, int64_t step, Callback<KeyRow> done) override;
  void CheckStore(std::function<void(Status)> done) override;

 private:
  Status ValidateStep(int64_t step) const;

  SegmentStore& store_;
  TaskRunner& db_;
  SegmentAllocator& allocator_;
  const CreatedListener on_created_;
};

}  // namespace seqd
