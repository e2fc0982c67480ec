// SegmentStores for tests: one that forwards to another store (the base of
// the tests' stores that change a few calls), and one that fails every call.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "storage/segment_store.h"

namespace seqd {

// Forwards the single-key calls, the key rows' calls and the seq tables'
// calls to `inner`, which must outlive it (it is not used while this is
// built, so a subclass may pass its own member). The batch and fenced
// reservations (ReserveMany, ReserveEach, ReserveFenced) and
// PruneBlockTokens keep SegmentStore's defaults: the batches go through
// this store's Reserve, so a subclass that overrides Reserve changes them
// too.
class ForwardingSegmentStore : public SegmentStore {
 public:
  explicit ForwardingSegmentStore(SegmentStore& inner) : inner_(inner) {}

  Status EnsureSchema() override { return inner_.EnsureSchema(); }
  Result<ReservedSegment> Reserve(std::string_view key, std::optional<int64_t> step) override {
    return inner_.Reserve(key, step);
  }
  Status CreateKeys(const std::vector<NewKey>& keys, std::string_view description) override {
    return inner_.CreateKeys(keys, description);
  }
  Result<KeyRow> CreateKey(std::string_view key, int64_t step,
                           std::string_view description) override {
    return inner_.CreateKey(key, step, description);
  }
  Result<KeyRow> GetKey(std::string_view key) override { return inner_.GetKey(key); }
  Result<std::vector<KeyRow>> ListKeys(std::string_view after, size_t limit) override {
    return inner_.ListKeys(after, limit);
  }
  Result<KeyRow> SetStep(std::string_view key, int64_t step) override {
    return inner_.SetStep(key, step);
  }
  Result<std::vector<int64_t>> GetAllocTimes(const std::vector<std::string>& keys) override {
    return inner_.GetAllocTimes(keys);
  }
  Result<std::vector<int64_t>> GetUserSeqs(std::string_view user, UserSeqField field,
                                           const std::vector<std::string>& convs) override {
    return inner_.GetUserSeqs(user, field, convs);
  }
  Status SetUserSeqs(std::string_view user, UserSeqField field, bool raise_only,
                     const std::vector<UserSeqValue>& values) override {
    return inner_.SetUserSeqs(user, field, raise_only, values);
  }
  Result<std::vector<int64_t>> GetMinSeqs(const std::vector<std::string>& keys) override {
    return inner_.GetMinSeqs(keys);
  }
  Status SetMinSeqs(const std::vector<MinSeqValue>& values, const std::vector<ShardFence>& fences,
                    uint32_t* refused_shard = nullptr) override {
    return inner_.SetMinSeqs(values, fences, refused_shard);
  }
  Status Ping() override { return inner_.Ping(); }

 protected:
  SegmentStore& inner() { return inner_; }

 private:
  SegmentStore& inner_;
};

// Fails every call a SegmentStore must implement with `error` (the calls
// with defaults keep them).
class FailingSegmentStore final : public SegmentStore {
 public:
  explicit FailingSegmentStore(Error error) : error_(std::move(error)) {}

  Status EnsureSchema() override { return error_; }
  Result<ReservedSegment> Reserve(std::string_view, std::optional<int64_t>) override {
    return error_;
  }
  Result<KeyRow> CreateKey(std::string_view, int64_t, std::string_view) override { return error_; }
  Result<KeyRow> GetKey(std::string_view) override { return error_; }
  Result<std::vector<KeyRow>> ListKeys(std::string_view, size_t) override { return error_; }
  Result<KeyRow> SetStep(std::string_view, int64_t) override { return error_; }
  Status Ping() override { return error_; }

 private:
  const Error error_;
};

}  // namespace seqd
