// The seam's key administration: leaf_alloc rows as listeners may read and
// change them (server/core/key_admin.h implements it; a test may stub it).
//
// Thread safety: every method is safe from any thread and returns at once;
// `done` runs exactly once and must not block: on the calling thread when
// the arguments are refused (bad key, step, limit or description), else on
// a database thread with the store's answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "storage/segment_store.h"

namespace seqd {

inline constexpr size_t kMaxDescriptionLength = 256;
inline constexpr size_t kMaxListLimit = 1000;

class KeyAdminApi {
 public:
  template <typename T>
  using Callback = std::function<void(Result<T>)>;

  virtual ~KeyAdminApi() = default;

  // Rows with key > after, at most `limit` (1..kMaxListLimit). Reserved keys
  // (KeyIsReserved) are never listed; every other call refuses them as a
  // bad key (ValidateClientKey).
  virtual void ListKeys(std::string after, size_t limit, Callback<std::vector<KeyRow>> done) = 0;
  virtual void GetKey(std::string key, Callback<KeyRow> done) = 0;
  // Validates key, step (1..max_step) and description (<= 256 bytes).
  virtual void CreateKey(std::string key, int64_t step, std::string description,
                         Callback<KeyRow> done) = 0;
  // Validates step (1..max_step) and updates the in-memory key too.
  virtual void SetStep(std::string key, int64_t step, Callback<KeyRow> done) = 0;
  // Round trip to the store (readiness).
  virtual void CheckStore(std::function<void(Status)> done) = 0;
};

}  // namespace seqd
