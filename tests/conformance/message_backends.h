// The MessageStore backends the conformance checks run on (memory,
// SQLite, MariaDB), and the helpers the checks and suites share: request
// builders with unique server message ids.
//
// Test-only; include after <doctest/doctest.h>. Not thread-safe unless
// noted: a backend is driven by one test thread.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "storage/memory/memory_message_store.h"
#include "storage/message_store.h"
#include "storage/mysql/mysql_message_store.h"
#include "storage/mysql/mysql_store.h"
#include "storage/sqlite/sqlite_message_store.h"
#include "tests/conformance/conformance_support.h"
#include "tests/conformance/grouped_backends.h"

namespace seqd::message_conformance {

using namespace conformance;

// Globally unique server message ids, also across runs on one database.
inline int64_t NextServerId() {
  static std::atomic<int64_t> next{std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count() *
                                   16};
  return next++;
}

inline AppendRequest Req(const std::string& conv, const std::string& sender,
                         const std::string& client, std::string payload = "hello",
                         int32_t content_type = 1) {
  AppendRequest r;
  r.conv_id = conv;
  r.sender_id = sender;
  r.client_msg_id = client;
  r.content_type = content_type;
  r.payload = std::move(payload);
  r.server_msg_id = NextServerId();
  r.send_time_ms = 1700000000000 + r.server_msg_id % 1000000;
  return r;
}

// Appends `batch`, requiring success.
inline std::vector<AppendOutcome> MustAppend(MessageStore& s,
                                             const std::vector<AppendRequest>& batch,
                                             MaxSeqCache& cache) {
  auto r = s.Append(batch, cache);
  REQUIRE_MESSAGE(r.ok(), "Append -> ", Describe(r));
  REQUIRE(r->size() == batch.size());
  return std::move(r).value();
}

// Non-owning MessageStore forwarding to another: a second "instance" of the
// memory store, which cannot be shared otherwise.
class ForwardingMessageStore final : public MessageStore {
 public:
  explicit ForwardingMessageStore(MessageStore& inner) : in_(inner) {}
  Status EnsureSchema() override { return in_.EnsureSchema(); }
  Result<std::vector<AppendOutcome>> Append(std::span<const AppendRequest> batch,
                                            MaxSeqCache& cache) override {
    return in_.Append(batch, cache);
  }
  Result<int64_t> MaxSeq(std::string_view c) override { return in_.MaxSeq(c); }
  Result<std::vector<int64_t>> MaxSeqs(std::span<const std::string> c) override {
    return in_.MaxSeqs(c);
  }
  Result<MessagePage> GetRange(const RangeQuery& q) override { return in_.GetRange(q); }
  Result<std::vector<StoredMessage>> GetBySeqs(std::string_view c,
                                               std::span<const int64_t> s) override {
    return in_.GetBySeqs(c, s);
  }
  Result<StoredMessage> SetStatus(std::string_view c, int64_t seq, MessageStatus st) override {
    return in_.SetStatus(c, seq, st);
  }
  Result<int64_t> GetConvMinSeq(std::string_view c) override { return in_.GetConvMinSeq(c); }
  Status SetConvMinSeq(std::string_view c, int64_t m) override { return in_.SetConvMinSeq(c, m); }
  Result<std::optional<MemberState>> GetMember(std::string_view c, std::string_view u) override {
    return in_.GetMember(c, u);
  }
  Status PutMember(std::string_view c, std::string_view u, const MemberState& s) override {
    return in_.PutMember(c, u, s);
  }
  Result<MemberState> SetReadSeq(std::string_view c, std::string_view u, int64_t r,
                                 int64_t up) override {
    return in_.SetReadSeq(c, u, r, up);
  }
  Result<int64_t> CountUnread(std::string_view c, std::string_view u, int64_t a,
                              int64_t b) override {
    return in_.CountUnread(c, u, a, b);
  }
  Status Ping() override { return in_.Ping(); }

 private:
  MessageStore& in_;
};

// A new instance has its own cache at the caller.
class Backend : public StoreBackend<MessageStore> {
 public:
  // A request that this backend's Append rejects (a caller bug the store
  // catches), for the all-or-nothing check. `stored` is already stored in
  // conversation `conv`. Default: it reuses `stored`'s server_msg_id, which
  // the unique index on server_msg_id rejects.
  virtual AppendRequest Poison(const AppendRequest& stored, AppendRequest fresh) {
    fresh.server_msg_id = stored.server_msg_id;
    return fresh;
  }
  // False for a store whose batch of several conversations may be several
  // transactions (store groups: one per group).
  virtual bool atomic_batches() const { return true; }
};

class MemoryBackend final : public Backend {
 public:
  MessageStore& store() override { return store_; }
  std::unique_ptr<MessageStore> NewInstance() override {
    return std::make_unique<ForwardingMessageStore>(store_);
  }
  MemoryMessageStore& memory() { return store_; }

 private:
  MemoryMessageStore store_;
};

// Two memory stores as two store groups (tests/conformance/grouped_backends.h).
class GroupedBackend final : public Backend {
 public:
  GroupedBackend() : placement_(TwoGroupPlacement()) { store_ = NewInstance(); }
  MessageStore& store() override { return *store_; }
  bool atomic_batches() const override { return false; }
  std::unique_ptr<MessageStore> NewInstance() override {
    std::vector<std::unique_ptr<MessageStore>> groups;
    groups.push_back(std::make_unique<ForwardingMessageStore>(home_));
    groups.push_back(std::make_unique<ForwardingMessageStore>(b_));
    return std::make_unique<GroupedMessageStore>(std::move(groups), *placement_);
  }

 private:
  std::shared_ptr<StorePlacement> placement_;
  MemoryMessageStore home_;
  MemoryMessageStore b_;
  std::unique_ptr<MessageStore> store_;
};

inline std::unique_ptr<SqliteMessageStore> OpenSqlite(const std::string& path) {
  auto s = SqliteMessageStore::Open(path);
  REQUIRE_MESSAGE(s.ok(), "SqliteMessageStore::Open(", path, ") -> ", Describe(s));
  REQUIRE_OK((*s)->EnsureSchema());
  return std::move(s).value();
}

class SqliteBackend final : public SqliteFileBackend<Backend, MessageStore, SqliteMessageStore> {
 public:
  SqliteBackend() : SqliteFileBackend("seqd-msgconf-", "seqd.db", OpenSqlite) {}
};

class MysqlBackend final : public MysqlServerBackend<Backend, MessageStore, MysqlMessageStore> {
 public:
  // No index on server_msg_id here (unique by construction, and the index
  // costs ~10% of insert throughput): a sender id longer than its VARCHAR(128)
  // column, which strict mode rejects, plays the caller bug instead.
  AppendRequest Poison(const AppendRequest&, AppendRequest fresh) override {
    fresh.sender_id = std::string(300, 's');  // longer than the column: the INSERT fails
    return fresh;
  }
};

}  // namespace seqd::message_conformance
