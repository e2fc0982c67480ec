#include "server/core/key_admin.h"

namespace seqd {

Status KeyAdmin::ValidateStep(int64_t step) const {
  const int64_t max = allocator_.options().max_step;
  if (step < 1 || step > max) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "step must be an integer in [1, " + std::to_string(max) + "]");
  }
  return OkStatus();
}

void KeyAdmin::ListKeys(std::string after, size_t limit, Callback<std::vector<KeyRow>> done) {
  if (limit < 1 || limit > kMaxListLimit) {
    return done(MakeError(ErrorCode::kInvalidArgument,
                          "limit must be in [1, " + std::to_string(kMaxListLimit) + "]"));
  }
  db_.Post([this, after = std::move(after), limit, done = std::move(done)] {
    // Reserved rows are left out; the page is filled from the rows after
    // them, so a page shorter than `limit` still means the end.
    std::vector<KeyRow> page;
    std::string from = after;
    for (;;) {
      const size_t want = limit - page.size();
      Result<std::vector<KeyRow>> rows = store_.ListKeys(from, want);
      if (!rows) return done(rows.error());
      // The store has no more rows, or the page is full.
      const bool end = rows->size() < want;
      if (!rows->empty()) from = rows->back().key;  // before the rows move into the page
      for (KeyRow& row : *rows) {
        if (!KeyIsReserved(row.key)) page.push_back(std::move(row));
      }
      if (end || page.size() == limit) break;
    }
    done(std::move(page));
  });
}

void KeyAdmin::GetKey(std::string key, Callback<KeyRow> done) {
  if (auto s = ValidateClientKey(key); !s) return done(s.error());
  db_.Post([this, key = std::move(key), done = std::move(done)] { done(store_.GetKey(key)); });
}

void KeyAdmin::CreateKey(std::string key, int64_t step, std::string description,
                         Callback<KeyRow> done) {
  if (auto s = ValidateClientKey(key); !s) return done(s.error());
  if (auto s = ValidateStep(step); !s) return done(s.error());
  if (description.size() > kMaxDescriptionLength) {
    return done(MakeError(ErrorCode::kInvalidArgument, "description is longer than 256 bytes"));
  }
  db_.Post([this, key = std::move(key), step, description = std::move(description),
            done = std::move(done)] {
    Result<KeyRow> row = store_.CreateKey(key, step, description);
    if (row) {
      allocator_.OnKeyCreated(key);
      if (on_created_) on_created_(key);
    }
    done(std::move(row));
  });
}

void KeyAdmin::SetStep(std::string key, int64_t step, Callback<KeyRow> done) {
  if (auto s = ValidateClientKey(key); !s) return done(s.error());
  if (auto s = ValidateStep(step); !s) return done(s.error());
  db_.Post([this, key = std::move(key), step, done = std::move(done)] {
    Result<KeyRow> row = store_.SetStep(key, step);
    if (row) allocator_.OnTableStepChanged(key, row->step);
    done(std::move(row));
  });
}

void KeyAdmin::CheckStore(std::function<void(Status)> done) {
  db_.Post([this, done = std::move(done)] { done(store_.Ping()); });
}

}  // namespace seqd
