// Conformance suite for MessageStore implementations.
//
// The same checks run against every backend, each in its own doctest suite:
//   memory, sqlite  -> ctest message_store_conformance
//   mariadb         -> ctest message_store_conformance_mariadb; needs
//                      SEQD_TEST_MYSQL_URL (see scripts/mariadb.sh) and fails,
//                      not skips, without it
//   misc            -> factory spec parsing (no database needed)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/memory_message_store.h"
#include "storage/message_store.h"
#include "storage/message_store_factory.h"
#include "storage/mysql_message_store.h"
#include "storage/mysql_store.h"
#include "storage/sqlite_message_store.h"
#include "tests/conformance/conformance_support.h"

namespace seqd {
namespace {

using namespace conformance;

// ---------------------------------------------------------------- helpers

// Globally unique server message ids, also across runs on one database.
int64_t NextServerId() {
  static std::atomic<int64_t> next{std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count() *
                                   16};
  return next++;
}

AppendRequest Req(const std::string& conv, const std::string& sender, const std::string& client,
                  std::string payload = "hello", int32_t content_type = 1) {
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
std::vector<AppendOutcome> MustAppend(MessageStore& s, const std::vector<AppendRequest>& batch,
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

// ---------------------------------------------------------------- backends

class Backend {
 public:
  virtual ~Backend() = default;
  virtual MessageStore& store() = 0;
  // Another instance (own connection, own cache at the caller) on the same data.
  virtual std::unique_ptr<MessageStore> NewInstance() = 0;
  // A request that this backend's Append rejects (a caller bug the store
  // catches), for the all-or-nothing check. `stored` is already stored in
  // conversation `conv`. Default: it reuses `stored`'s server_msg_id, which
  // the unique index on server_msg_id rejects.
  virtual AppendRequest Poison(const AppendRequest& stored, AppendRequest fresh) {
    fresh.server_msg_id = stored.server_msg_id;
    return fresh;
  }
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

std::unique_ptr<SqliteMessageStore> OpenSqlite(const std::string& path) {
  auto s = SqliteMessageStore::Open(path);
  REQUIRE_MESSAGE(s.ok(), "SqliteMessageStore::Open(", path, ") -> ", Describe(s));
  REQUIRE_OK((*s)->EnsureSchema());
  return std::move(s).value();
}

class SqliteBackend final : public Backend {
 public:
  SqliteBackend() : dir_("seqd-msgconf-"), path_((dir_.path() / "sub" / "seqd.db").string()) {
    store_ = OpenSqlite(path_);
  }
  MessageStore& store() override { return *store_; }
  std::unique_ptr<MessageStore> NewInstance() override { return OpenSqlite(path_); }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;  // declared first: removed after the store closed
  std::string path_;
  std::unique_ptr<SqliteMessageStore> store_;
};

class MysqlBackend final : public Backend {
 public:
  MysqlBackend() : opts_(TestMysqlOptions()) {
    store_ = std::make_unique<MysqlMessageStore>(opts_);
    REQUIRE_OK(store_->EnsureSchema());
  }
  MessageStore& store() override { return *store_; }
  // No index on server_msg_id here (unique by construction, and the index
  // costs ~10% of insert throughput): a sender id longer than its VARCHAR(128)
  // column, which strict mode rejects, plays the caller bug instead.
  AppendRequest Poison(const AppendRequest&, AppendRequest fresh) override {
    fresh.sender_id = std::string(200, 's');
    return fresh;
  }
  std::unique_ptr<MessageStore> NewInstance() override {
    auto s = std::make_unique<MysqlMessageStore>(opts_);
    REQUIRE_OK(s->EnsureSchema());
    return s;
  }
  const MysqlOptions& options() const { return opts_; }

 private:
  MysqlOptions opts_;
  std::unique_ptr<MysqlMessageStore> store_;
};

// ---------------------------------------------------------------- checks

// Every message of `conv`, ascending, read in pages.
std::vector<StoredMessage> ReadAll(MessageStore& s, const std::string& conv) {
  std::vector<StoredMessage> all;
  int64_t from = 1;
  for (int guard = 0; guard < 100000; ++guard) {
    RangeQuery q;
    q.conv_id = conv;
    q.from_seq = from;
    q.to_seq = std::numeric_limits<int64_t>::max();
    q.limit = 500;
    auto page = s.GetRange(q);
    REQUIRE_OK(page);
    for (auto& m : page->messages) all.push_back(m);
    if (!page->more) break;
    REQUIRE_FALSE(page->messages.empty());
    from = page->messages.back().seq + 1;
  }
  return all;
}

void CheckContiguousSeqs(Backend& b) {
  MessageStore& s = b.store();
  REQUIRE_OK(s.Ping());
  REQUIRE_OK(s.EnsureSchema());  // idempotent
  const std::string c1 = UniqueName("contig-a");
  const std::string c2 = UniqueName("contig-b");
  const std::string c3 = UniqueName("contig-c");
  MaxSeqCache cache;
  std::map<std::string, int64_t> want;
  int n = 0;
  for (int batch_no = 0; batch_no < 6; ++batch_no) {
    std::vector<AppendRequest> batch;
    for (int i = 0; i < 7 + batch_no; ++i) {
      const std::string& c = (i % 3 == 0) ? c1 : (i % 3 == 1 ? c2 : c3);
      if (batch_no == 2 && c == c3) continue;  // c3 skips a batch
      batch.push_back(Req(c, Num("u", i % 2), Num("m", n++)));
    }
    auto out = MustAppend(s, batch, cache);
    for (size_t i = 0; i < batch.size(); ++i) {
      CAPTURE(i);
      CHECK_FALSE(out[i].duplicate);
      CHECK(out[i].seq == ++want[batch[i].conv_id]);
      CHECK(out[i].server_msg_id == batch[i].server_msg_id);
      CHECK(out[i].send_time_ms == batch[i].send_time_ms);
    }
    for (const auto& [c, max] : want) {
      if (std::any_of(batch.begin(), batch.end(), [&](auto& r) { return r.conv_id == c; })) {
        REQUIRE(cache.count(c) == 1);
        CHECK(cache[c] == max);
      }
    }
  }
  for (const auto& [c, max] : want) {
    auto got = s.MaxSeq(c);
    REQUIRE_OK(got);
    CHECK(*got == max);
    auto all = ReadAll(s, c);
    REQUIRE(static_cast<int64_t>(all.size()) == max);
    for (size_t i = 0; i < all.size(); ++i) CHECK(all[i].seq == static_cast<int64_t>(i + 1));
  }
  // A fresh cache (another writer) continues where the store is.
  MaxSeqCache other;
  auto out = MustAppend(s, {Req(c1, "u9", "late")}, other);
  CHECK(out[0].seq == want[c1] + 1);
  CHECK(other[c1] == want[c1] + 1);
  // Empty batch: nothing to do.
  auto empty = s.Append(std::span<const AppendRequest>(), cache);
  REQUIRE_OK(empty);
  CHECK(empty->empty());
}

void CheckDuplicates(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("dup");
  const std::string other_conv = UniqueName("dup-other");
  MaxSeqCache cache;
  auto first = MustAppend(s, {Req(c, "alice", "x1", "one"), Req(c, "alice", "x2", "two")}, cache);
  CHECK(first[0].seq == 1);
  CHECK(first[1].seq == 2);

  // Re-send in a later batch, with a different payload and server id:
  // the original outcome, nothing stored.
  AppendRequest resend = Req(c, "alice", "x1", "changed payload");
  AppendRequest same_client_other_sender = Req(c, "bob", "x1", "bob's");
  AppendRequest same_client_other_conv = Req(other_conv, "alice", "x1", "elsewhere");
  AppendRequest fresh = Req(c, "alice", "x3", "three");
  AppendRequest fresh_again = Req(c, "alice", "x3", "three again");  // dup inside the batch
  AppendRequest resend2 = Req(c, "alice", "x2", "two again");
  auto out = MustAppend(
      s, {resend, same_client_other_sender, same_client_other_conv, fresh, fresh_again, resend2},
      cache);
  CHECK(out[0] == AppendOutcome{1, first[0].server_msg_id, first[0].send_time_ms, true});
  CHECK(out[1] == AppendOutcome{3, same_client_other_sender.server_msg_id,
                                same_client_other_sender.send_time_ms, false});
  CHECK(out[2] == AppendOutcome{1, same_client_other_conv.server_msg_id,
                                same_client_other_conv.send_time_ms, false});
  CHECK(out[3] == AppendOutcome{4, fresh.server_msg_id, fresh.send_time_ms, false});
  CHECK(out[4] == AppendOutcome{4, fresh.server_msg_id, fresh.send_time_ms, true});
  CHECK(out[5] == AppendOutcome{2, first[1].server_msg_id, first[1].send_time_ms, true});
  CHECK(cache[c] == 4);
  CHECK(cache[other_conv] == 1);

  auto all = ReadAll(s, c);
  REQUIRE(all.size() == 4);
  CHECK(all[0].payload == "one");
  CHECK(all[1].payload == "two");
  CHECK(all[2].sender_id == "bob");
  CHECK(all[3].payload == "three");

  // A batch of nothing but duplicates, with an empty cache.
  MaxSeqCache fresh_cache;
  out = MustAppend(s, {Req(c, "alice", "x1"), Req(c, "bob", "x1")}, fresh_cache);
  CHECK(out[0].duplicate);
  CHECK(out[0].seq == 1);
  CHECK(out[1].duplicate);
  CHECK(out[1].seq == 3);
  auto max = s.MaxSeq(c);
  REQUIRE_OK(max);
  CHECK(*max == 4);
  if (fresh_cache.count(c)) CHECK(fresh_cache[c] == 4);

  // Ids compare byte for byte: case matters.
  out = MustAppend(s, {Req(c, "Alice", "x1"), Req(c, "alice", "X1")}, cache);
  CHECK_FALSE(out[0].duplicate);
  CHECK_FALSE(out[1].duplicate);
  CHECK(out[0].seq == 5);
  CHECK(out[1].seq == 6);
}

// Append run again with the very same requests (same server_msg_ids), as
// after a COMMIT whose outcome was unknown: the first run's seqs, not
// duplicates, nothing stored twice, with a stale cache or none.
void CheckAppendRunAgain(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("again");
  MaxSeqCache cache;
  MustAppend(s, {Req(c, "carol", "p0")}, cache);
  const std::vector<AppendRequest> batch = {Req(c, "alice", "r1", "one"),
                                            Req(c, "bob", "r2", "two")};
  MaxSeqCache stale = cache;  // what the caller knew before the lost commit
  auto first = MustAppend(s, batch, cache);
  CHECK(first[0].seq == 2);
  CHECK(first[1].seq == 3);
  for (MaxSeqCache* again_cache : {&stale, &cache}) {
    MaxSeqCache copy = *again_cache;
    auto again = MustAppend(s, batch, copy);
    CHECK(again == first);  // same seqs, ids and times; duplicate = false
  }
  MaxSeqCache none;
  auto again = MustAppend(s, batch, none);
  CHECK(again == first);
  // A real re-send (a new server_msg_id) is still a duplicate.
  auto resend = MustAppend(s, {Req(c, "alice", "r1", "one")}, cache);
  CHECK(resend[0].duplicate);
  CHECK(resend[0].seq == 2);
  CHECK(ReadAll(s, c).size() == 3);
}

void CheckStaleCache(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("stale");
  const std::string d = UniqueName("stale-d");
  MaxSeqCache cache;
  std::vector<AppendRequest> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(Req(c, "u", Num("m", i)));
  batch.push_back(Req(d, "u", "d0"));
  MustAppend(s, batch, cache);
  CHECK(cache[c] == 10);

  cache[c] = 3;  // stale: another process wrote 4..10
  cache[d] = 0;  // stale too
  auto out = MustAppend(s, {Req(c, "u", "new1"), Req(d, "u", "d1"), Req(c, "u", "new2")}, cache);
  CHECK(out[0].seq == 11);
  CHECK(out[1].seq == 2);
  CHECK(out[2].seq == 12);
  CHECK_FALSE(out[0].duplicate);
  CHECK(cache[c] == 12);
  CHECK(cache[d] == 2);

  // Stale cache and a duplicate in one batch.
  cache[c] = 5;
  out = MustAppend(s, {Req(c, "u", "m7"), Req(c, "u", "new3")}, cache);
  CHECK(out[0].duplicate);
  CHECK(out[0].seq == 8);
  CHECK(out[1].seq == 13);
  CHECK(cache[c] == 13);
  auto all = ReadAll(s, c);
  REQUIRE(all.size() == 13);
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i].seq == static_cast<int64_t>(i + 1));
}

void CheckFailedAppend(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("fail");
  const std::string d = UniqueName("fail-d");
  MaxSeqCache cache;
  const AppendRequest stored = Req(c, "u", "a");
  MustAppend(s, {stored, Req(d, "u", "a")}, cache);
  // A request the store rejects (a caller bug) fails the whole batch.
  auto r = s.Append(
      std::vector<AppendRequest>{Req(c, "u", "b"), b.Poison(stored, Req(d, "u", "b"))}, cache);
  CHECK_FALSE(r.ok());
  CHECK(cache.count(c) == 0);
  CHECK(cache.count(d) == 0);
  auto max = s.MaxSeq(c);
  REQUIRE_OK(max);
  CHECK(*max == 1);  // all or nothing
  // The store goes on.
  auto out = MustAppend(s, {Req(c, "u", "b"), Req(d, "u", "b")}, cache);
  CHECK(out[0].seq == 2);
  CHECK(out[1].seq == 2);
}

// Two instances ("processes"), each with several writer threads and own
// caches, append to the SAME conversation.
void CheckConcurrentInstances(Backend& b, int threads_per_instance, int batches, int batch_size) {
  const std::string c = UniqueName("race");
  const std::string side = UniqueName("race-side");
  std::vector<std::unique_ptr<MessageStore>> instances;
  instances.push_back(b.NewInstance());
  instances.push_back(b.NewInstance());
  const int nthreads = 2 * threads_per_instance;
  std::vector<std::map<std::string, AppendOutcome>> results(nthreads);
  std::vector<std::string> errors(nthreads);
  std::atomic<int> retries{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      MessageStore& s = *instances[t % 2];
      MaxSeqCache cache;
      while (!go) std::this_thread::yield();
      for (int i = 0; i < batches; ++i) {
        std::vector<AppendRequest> batch;
        for (int j = 0; j < batch_size; ++j) {
          const std::string id = Num("t", t) + Num("-", i) + "-" + std::to_string(j);
          batch.push_back(Req(j % 4 == 3 ? side : c, Num("s", t), id));
        }
        for (int attempt = 0;; ++attempt) {
          auto r = s.Append(batch, cache);
          if (r.ok()) {
            for (size_t k = 0; k < batch.size(); ++k) {
              results[t][batch[k].conv_id + "/" + batch[k].client_msg_id] = (*r)[k];
            }
            break;
          }
          if (r.error().code != ErrorCode::kStoreUnavailable || attempt >= 50) {
            errors[t] = Describe(r.error());
            return;
          }
          ++retries;  // e.g. a deadlock: re-sending is safe
          for (auto& req : batch) req.server_msg_id = NextServerId();
        }
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  for (int t = 0; t < nthreads; ++t)
    CHECK_MESSAGE(errors[t].empty(), "thread ", t, ": ", errors[t]);
  MESSAGE("retried batches: ", retries.load());

  std::map<std::string, std::set<int64_t>> seqs;
  std::map<std::string, size_t> count;
  for (const auto& per_thread : results) {
    for (const auto& [key, o] : per_thread) {
      const std::string conv = key.substr(0, key.find('/'));
      seqs[conv].insert(o.seq);
      ++count[conv];
    }
  }
  for (const std::string& conv : {c, side}) {
    CAPTURE(conv);
    const size_t n = count[conv];
    CHECK(seqs[conv].size() == n);  // no seq given twice
    CHECK(*seqs[conv].begin() == 1);
    CHECK(*seqs[conv].rbegin() == static_cast<int64_t>(n));
    auto all = ReadAll(b.store(), conv);
    REQUIRE(all.size() == n);
    std::set<std::string> clients;
    for (size_t i = 0; i < all.size(); ++i) {
      CHECK(all[i].seq == static_cast<int64_t>(i + 1));
      clients.insert(all[i].sender_id + "/" + all[i].client_msg_id);
    }
    CHECK(clients.size() == n);  // every client id once
  }
  CHECK(count[c] + count[side] == static_cast<size_t>(nthreads * batches * batch_size));
}

void CheckRangeQueries(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("range");
  MaxSeqCache cache;
  std::vector<AppendRequest> batch;
  for (int i = 1; i <= 10; ++i) batch.push_back(Req(c, "u", Num("m", i), Num("p", i), i));
  MustAppend(s, batch, cache);

  auto seqs_of = [](const MessagePage& p) {
    std::vector<int64_t> v;
    for (const auto& m : p.messages) v.push_back(m.seq);
    return v;
  };
  auto range = [&](int64_t from, int64_t to, size_t limit, bool desc) {
    RangeQuery q;
    q.conv_id = c;
    q.from_seq = from;
    q.to_seq = to;
    q.limit = limit;
    q.descending = desc;
    auto r = s.GetRange(q);
    REQUIRE_OK(r);
    return std::move(r).value();
  };
  auto p = range(1, 10, 100, false);
  CHECK(seqs_of(p) == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK_FALSE(p.more);
  // Every field round-trips.
  const StoredMessage& m3 = p.messages[2];
  CHECK(m3.conv_id == c);
  CHECK(m3.sender_id == "u");
  CHECK(m3.client_msg_id == "m3");
  CHECK(m3.payload == "p3");
  CHECK(m3.content_type == 3);
  CHECK(m3.server_msg_id == batch[2].server_msg_id);
  CHECK(m3.send_time_ms == batch[2].send_time_ms);
  CHECK(m3.status == MessageStatus::kNormal);

  p = range(3, 8, 4, false);
  CHECK(seqs_of(p) == std::vector<int64_t>{3, 4, 5, 6});
  CHECK(p.more);
  p = range(3, 8, 6, false);
  CHECK(seqs_of(p) == std::vector<int64_t>{3, 4, 5, 6, 7, 8});
  CHECK_FALSE(p.more);  // 9 and 10 are outside the range
  p = range(3, 8, 4, true);
  CHECK(seqs_of(p) == std::vector<int64_t>{8, 7, 6, 5});
  CHECK(p.more);
  p = range(1, 100, 3, true);
  CHECK(seqs_of(p) == std::vector<int64_t>{10, 9, 8});
  CHECK(p.more);
  p = range(8, 100, 3, true);
  CHECK(seqs_of(p) == std::vector<int64_t>{10, 9, 8});
  CHECK_FALSE(p.more);
  p = range(10, 10, 1, false);
  CHECK(seqs_of(p) == std::vector<int64_t>{10});
  CHECK_FALSE(p.more);
  p = range(11, 20, 5, false);
  CHECK(p.messages.empty());
  CHECK_FALSE(p.more);
  p = range(1, 5, 1, false);
  CHECK(seqs_of(p) == std::vector<int64_t>{1});
  CHECK(p.more);

  RangeQuery none;
  none.conv_id = UniqueName("range-none");
  none.to_seq = 100;
  auto empty = s.GetRange(none);
  REQUIRE_OK(empty);
  CHECK(empty->messages.empty());
  CHECK_FALSE(empty->more);

  // GetBySeqs: missing and repeated seqs, any order in, ascending out.
  std::vector<int64_t> want = {9, 2, 2, 42, 0, -1, 5, 9, 11};
  auto got = s.GetBySeqs(c, want);
  REQUIRE_OK(got);
  std::vector<int64_t> got_seqs;
  for (const auto& m : *got) got_seqs.push_back(m.seq);
  CHECK(got_seqs == std::vector<int64_t>{2, 5, 9});
  if (got->size() == 3) CHECK((*got)[1].payload == "p5");
  got = s.GetBySeqs(c, std::vector<int64_t>{});
  REQUIRE_OK(got);
  CHECK(got->empty());
  got = s.GetBySeqs(UniqueName("range-missing"), std::vector<int64_t>{1, 2});
  REQUIRE_OK(got);
  CHECK(got->empty());

  // MaxSeq / MaxSeqs.
  const std::string c2 = UniqueName("range-2");
  MustAppend(s, {Req(c2, "u", "a"), Req(c2, "u", "b")}, cache);
  const std::string missing = UniqueName("range-missing");
  std::vector<std::string> convs = {c2, missing, c, c2};
  auto maxes = s.MaxSeqs(convs);
  REQUIRE_OK(maxes);
  CHECK(*maxes == std::vector<int64_t>{2, 0, 10, 2});
  auto none_max = s.MaxSeqs(std::vector<std::string>{});
  REQUIRE_OK(none_max);
  CHECK(none_max->empty());
  auto one = s.MaxSeq(missing);
  REQUIRE_OK(one);
  CHECK(*one == 0);
}

void CheckStatusAndPayloads(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("status");
  MaxSeqCache cache;
  std::string nul_payload("a\0b\0\0c", 6);
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  std::string big(200 * 1024, 'z');
  big[1000] = '\0';
  auto out =
      MustAppend(s,
                 {Req(c, "u", "1", nul_payload), Req(c, "u", "2", ""), Req(c, "u", "3", binary),
                  Req(c, "u", "4", big), Req(c, "u", "5", "to recall")},
                 cache);
  auto all = ReadAll(s, c);
  REQUIRE(all.size() == 5);
  CHECK(all[0].payload == nul_payload);
  CHECK(all[0].payload.size() == 6);
  CHECK(all[1].payload.empty());
  CHECK(all[2].payload == binary);
  CHECK(all[3].payload == big);

  auto recalled = s.SetStatus(c, 5, MessageStatus::kRecalled);
  REQUIRE_OK(recalled);
  CHECK(recalled->seq == 5);
  CHECK(recalled->status == MessageStatus::kRecalled);
  CHECK(recalled->payload.empty());
  CHECK(recalled->client_msg_id == "5");
  CHECK(recalled->server_msg_id == out[4].server_msg_id);
  auto deleted = s.SetStatus(c, 1, MessageStatus::kDeleted);
  REQUIRE_OK(deleted);
  CHECK(deleted->status == MessageStatus::kDeleted);
  CHECK(deleted->payload.empty());
  // Again: still fine, still cleared.
  REQUIRE_OK(s.SetStatus(c, 1, MessageStatus::kDeleted));
  CHECK_ERR(s.SetStatus(c, 6, MessageStatus::kDeleted), ErrorCode::kNotFound);
  CHECK_ERR(s.SetStatus(UniqueName("status-none"), 1, MessageStatus::kRecalled),
            ErrorCode::kNotFound);

  all = ReadAll(s, c);
  REQUIRE(all.size() == 5);  // rows stay: seqs stay contiguous
  CHECK(all[0].status == MessageStatus::kDeleted);
  CHECK(all[0].payload.empty());
  CHECK(all[4].status == MessageStatus::kRecalled);
  CHECK(all[2].status == MessageStatus::kNormal);
  // A re-send of a recalled message is still a duplicate.
  auto dup = MustAppend(s, {Req(c, "u", "5")}, cache);
  CHECK(dup[0].duplicate);
  CHECK(dup[0].seq == 5);
  // The next message still takes max + 1.
  auto next = MustAppend(s, {Req(c, "u", "6")}, cache);
  CHECK(next[0].seq == 6);

  CHECK(MessageStatusName(MessageStatus::kNormal) == "normal");
  CHECK(MessageStatusName(MessageStatus::kRecalled) == "recalled");
  CHECK(MessageStatusName(MessageStatus::kDeleted) == "deleted");
}

void CheckConvAndMembers(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("members");
  auto min = s.GetConvMinSeq(c);
  REQUIRE_OK(min);
  CHECK(*min == 1);
  REQUIRE_OK(s.SetConvMinSeq(c, 7));
  min = s.GetConvMinSeq(c);
  REQUIRE_OK(min);
  CHECK(*min == 7);
  REQUIRE_OK(s.SetConvMinSeq(c, 3));  // replaces
  min = s.GetConvMinSeq(c);
  REQUIRE_OK(min);
  CHECK(*min == 3);

  auto m = s.GetMember(c, "alice");
  REQUIRE_OK(m);
  CHECK_FALSE(m->has_value());
  MemberState st;
  st.min_seq = 2;
  st.read_seq = 1;
  REQUIRE_OK(s.PutMember(c, "alice", st));
  m = s.GetMember(c, "alice");
  REQUIRE_OK(m);
  REQUIRE(m->has_value());
  CHECK(**m == st);
  CHECK_FALSE((*m)->max_seq.has_value());
  CHECK_FALSE(s.GetMember(c, "Alice")->has_value());  // byte for byte

  MemberState bounded{4, 9, 5};
  REQUIRE_OK(s.PutMember(c, "bob", bounded));
  m = s.GetMember(c, "bob");
  REQUIRE_OK(m);
  REQUIRE(m->has_value());
  CHECK(**m == bounded);

  auto r = s.SetReadSeq(c, "alice", 5, 10);
  REQUIRE_OK(r);
  CHECK(r->read_seq == 5);
  CHECK(r->min_seq == 2);
  r = s.SetReadSeq(c, "alice", 5, 10);  // same value: fine
  REQUIRE_OK(r);
  CHECK(r->read_seq == 5);
  CHECK_ERR(s.SetReadSeq(c, "alice", 4, 10), ErrorCode::kFailedPrecondition);   // backwards
  CHECK_ERR(s.SetReadSeq(c, "alice", 11, 10), ErrorCode::kFailedPrecondition);  // above upper
  CHECK_ERR(s.SetReadSeq(c, "carol", 1, 10), ErrorCode::kNotFound);
  r = s.SetReadSeq(c, "alice", 10, 10);
  REQUIRE_OK(r);
  CHECK(r->read_seq == 10);
  m = s.GetMember(c, "alice");
  REQUIRE_OK(m);
  REQUIRE(m->has_value());
  CHECK((*m)->read_seq == 10);
  CHECK((*m)->min_seq == 2);

  // PutMember replaces the whole row (max_seq back to none).
  MemberState unbounded{4, std::nullopt, 0};
  REQUIRE_OK(s.PutMember(c, "bob", unbounded));
  m = s.GetMember(c, "bob");
  REQUIRE_OK(m);
  REQUIRE(m->has_value());
  CHECK(**m == unbounded);
}

void CheckCountUnread(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("unread");
  MaxSeqCache cache;
  // 1 alice, 2 bob, 3 alice, 4 bob, 5 carol, 6 bob, 7 alice
  const char* senders[] = {"alice", "bob", "alice", "bob", "carol", "bob", "alice"};
  std::vector<AppendRequest> batch;
  for (int i = 0; i < 7; ++i) batch.push_back(Req(c, senders[i], Num("m", i)));
  MustAppend(s, batch, cache);
  auto count = [&](const std::string& user, int64_t after, int64_t upto) {
    auto r = s.CountUnread(c, user, after, upto);
    REQUIRE_OK(r);
    return *r;
  };
  CHECK(count("alice", 0, 7) == 4);
  CHECK(count("bob", 0, 7) == 4);
  CHECK(count("dave", 0, 7) == 7);
  CHECK(count("dave", 2, 5) == 3);  // 3, 4, 5
  CHECK(count("dave", 7, 7) == 0);
  CHECK(count("dave", 0, 100) == 7);
  CHECK(count("alice", 3, 6) == 3);
  REQUIRE_OK(s.SetStatus(c, 4, MessageStatus::kRecalled));
  REQUIRE_OK(s.SetStatus(c, 5, MessageStatus::kDeleted));
  CHECK(count("alice", 0, 7) == 2);  // 2, 6
  CHECK(count("dave", 0, 7) == 5);
  auto none = s.CountUnread(UniqueName("unread-none"), "alice", 0, 100);
  REQUIRE_OK(none);
  CHECK(*none == 0);
}

#define SEQD_MESSAGE_CONFORMANCE_CASES(BACKEND, NAME)                                 \
  TEST_CASE(NAME ": seqs 1..N contiguous across batches and conversations") {         \
    BACKEND b;                                                                        \
    CheckContiguousSeqs(b);                                                           \
  }                                                                                   \
  TEST_CASE(NAME ": duplicates return the original outcome and take no seq") {        \
    BACKEND b;                                                                        \
    CheckDuplicates(b);                                                               \
  }                                                                                   \
  TEST_CASE(NAME ": Append run again with the same requests answers the first run") { \
    BACKEND b;                                                                        \
    CheckAppendRunAgain(b);                                                           \
  }                                                                                   \
  TEST_CASE(NAME ": a stale max_seq_cache costs a retry, never a wrong seq") {        \
    BACKEND b;                                                                        \
    CheckStaleCache(b);                                                               \
  }                                                                                   \
  TEST_CASE(NAME ": a failed Append stores nothing and erases the cache entries") {   \
    BACKEND b;                                                                        \
    CheckFailedAppend(b);                                                             \
  }                                                                                   \
  TEST_CASE(NAME ": two instances x 3 threads on one conversation: seqs 1..N once") { \
    BACKEND b;                                                                        \
    CheckConcurrentInstances(b, 3, 30, 8);                                            \
  }                                                                                   \
  TEST_CASE(NAME ": GetRange, GetBySeqs, MaxSeq, MaxSeqs") {                          \
    BACKEND b;                                                                        \
    CheckRangeQueries(b);                                                             \
  }                                                                                   \
  TEST_CASE(NAME ": SetStatus and binary payloads") {                                 \
    BACKEND b;                                                                        \
    CheckStatusAndPayloads(b);                                                        \
  }                                                                                   \
  TEST_CASE(NAME ": conversation min seq, members, SetReadSeq rules") {               \
    BACKEND b;                                                                        \
    CheckConvAndMembers(b);                                                           \
  }                                                                                   \
  TEST_CASE(NAME ": CountUnread") {                                                   \
    BACKEND b;                                                                        \
    CheckCountUnread(b);                                                              \
  }

}  // namespace

// ================================================================ suites

TEST_SUITE("memory") {
  SEQD_MESSAGE_CONFORMANCE_CASES(MemoryBackend, "memory")

  TEST_CASE("memory: SetAvailable(false) fails every call and erases cache entries") {
    MemoryBackend b;
    MemoryMessageStore& s = b.memory();
    const std::string c = UniqueName("down");
    const std::string other = UniqueName("down-other");
    MaxSeqCache cache;
    MustAppend(s, {Req(c, "u", "1")}, cache);
    cache[other] = 5;
    REQUIRE(cache[c] == 1);
    s.SetAvailable(false);
    CHECK_ERR(s.Append(std::vector<AppendRequest>{Req(c, "u", "2")}, cache),
              ErrorCode::kStoreUnavailable);
    CHECK(cache.count(c) == 0);
    CHECK(cache.count(other) == 1);  // not in the batch: kept
    CHECK_ERR(s.Ping(), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.MaxSeq(c), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.GetBySeqs(c, std::vector<int64_t>{1}), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.GetMember(c, "u"), ErrorCode::kStoreUnavailable);
    CHECK_ERR(s.SetConvMinSeq(c, 2), ErrorCode::kStoreUnavailable);
    s.SetAvailable(true);
    auto out = MustAppend(s, {Req(c, "u", "2")}, cache);
    CHECK(out[0].seq == 2);
  }
}

TEST_SUITE("sqlite") {
  SEQD_MESSAGE_CONFORMANCE_CASES(SqliteBackend, "sqlite")

  TEST_CASE("sqlite: a held write lock fails Append with kStoreUnavailable, cache erased") {
    SqliteBackend b;
    MessageStore& s = b.store();
    const std::string c = UniqueName("locked");
    MaxSeqCache cache;
    MustAppend(s, {Req(c, "u", "1")}, cache);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(b.path().c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    const auto start = std::chrono::steady_clock::now();
    CHECK_ERR(s.Append(std::vector<AppendRequest>{Req(c, "u", "2")}, cache),
              ErrorCode::kStoreUnavailable);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    CHECK(cache.count(c) == 0);
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    auto out = MustAppend(s, {Req(c, "u", "2"), Req(c, "u", "1")}, cache);
    CHECK(out[0].seq == 2);
    CHECK(out[1].duplicate);
  }

  TEST_CASE("sqlite: data persists across reopening; schema is idempotent") {
    SqliteBackend b;
    const std::string c = UniqueName("persist");
    MaxSeqCache cache;
    {
      auto s = b.NewInstance();
      MustAppend(*s, {Req(c, "u", "1", std::string("x\0y", 3)), Req(c, "u", "2")}, cache);
    }
    auto s = b.NewInstance();
    auto all = ReadAll(*s, c);
    REQUIRE(all.size() == 2);
    CHECK(all[0].payload == std::string("x\0y", 3));
  }

  TEST_CASE("sqlite: unopenable path gives kStoreUnavailable, not a crash") {
    SqliteMessageStore s("/proc/definitely/not/here/seqd.db");
    CHECK_ERR(s.Ping(), ErrorCode::kStoreUnavailable);
    MaxSeqCache cache{{"c", 3}};
    CHECK_ERR(s.Append(std::vector<AppendRequest>{Req("c", "u", "1")}, cache),
              ErrorCode::kStoreUnavailable);
    CHECK(cache.empty());
  }
}

TEST_SUITE("misc") {
  TEST_CASE("OpenMessageStore: specs") {
    auto mem = OpenMessageStore("memory:");
    REQUIRE_OK(mem);
    MaxSeqCache cache;
    auto out = (*mem)->Append(std::vector<AppendRequest>{Req("c", "u", "1")}, cache);
    REQUIRE_OK(out);
    CHECK((*out)[0].seq == 1);

    for (const char* bad : {"", "memory", "memory:x", "sqlite:", "postgres://u@h/db", "bogus"}) {
      CAPTURE(bad);
      CHECK_ERR(OpenMessageStore(bad), ErrorCode::kInvalidArgument);
    }
    auto bad_url = OpenMessageStore("mysql://user:s3cretpw@host:notaport/db");
    CHECK_ERR(bad_url, ErrorCode::kInvalidArgument);
    if (!bad_url.ok()) CHECK(bad_url.error().message.find("s3cretpw") == std::string::npos);

    // mysql: parses only; an unreachable server is reported by the calls.
    auto my = OpenMessageStore("mysql://user:pw@127.0.0.1:1/db");
    REQUIRE_OK(my);
    CHECK_ERR((*my)->Ping(), ErrorCode::kStoreUnavailable);
    cache = {{"c", 4}};
    CHECK_ERR((*my)->Append(std::vector<AppendRequest>{Req("c", "u", "1")}, cache),
              ErrorCode::kStoreUnavailable);
    CHECK(cache.empty());

    const fs::path dir = MakeTempDir("seqd-msgconf-");
    auto lite = OpenMessageStore("sqlite:" + (dir / "a" / "seqd.db").string());
    REQUIRE_OK(lite);
    out = (*lite)->Append(std::vector<AppendRequest>{Req("c", "u", "1")}, cache);
    REQUIRE_OK(out);
    CHECK((*out)[0].seq == 1);
    lite = MakeError(ErrorCode::kInternal, "closed");
    CHECK_ERR(OpenMessageStore("sqlite:/proc/nope/seqd.db"), ErrorCode::kStoreUnavailable);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

TEST_SUITE("mariadb") {
  TEST_CASE("mariadb: SEQD_TEST_MYSQL_URL is set and the server answers") {
    MysqlMessageStore store(TestMysqlOptions());
    REQUIRE_OK(store.Ping());
    REQUIRE_OK(store.EnsureSchema());
    REQUIRE_OK(store.EnsureSchema());  // idempotent
  }

  SEQD_MESSAGE_CONFORMANCE_CASES(MysqlBackend, "mariadb")

  TEST_CASE("mariadb: after KILL of the store's connections the next calls reconnect") {
    MysqlBackend b;
    MessageStore& s = b.store();
    const std::string c = UniqueName("kill");
    MaxSeqCache cache;
    MustAppend(s, {Req(c, "u", "0")}, cache);
    const RawHosts raw(b.options());
    int64_t expect = 1;
    for (int round = 0; round < 3; ++round) {
      CAPTURE(round);
      std::thread other([&] { (void)s.Ping(); });
      (void)s.Ping();
      other.join();
      const auto ids = raw.OtherIds(b.options().user);
      REQUIRE_FALSE(ids.empty());
      raw.Kill(ids);
      auto r = s.Append(std::vector<AppendRequest>{Req(c, "u", Num("r", round))}, cache);
      REQUIRE_MESSAGE(r.ok(), "Append after KILL: ", Describe(r));
      CHECK((*r)[0].seq == ++expect);
      CHECK_FALSE((*r)[0].duplicate);
      REQUIRE_OK(s.Ping());
      auto max = s.MaxSeq(c);
      REQUIRE_OK(max);
      CHECK(*max == expect);
    }
  }

  TEST_CASE("mariadb: schema is InnoDB, utf8mb4_bin, with the documented keys") {
    MysqlBackend b;
    auto raw = RawMysql(b.options());
    std::unique_ptr<sql::Statement> st(raw->createStatement());
    std::unique_ptr<sql::ResultSet> rs(st->executeQuery(
        "SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('seqd_conv', 'seqd_conv_member', "
        "'seqd_message') ORDER BY TABLE_NAME"));
    std::vector<std::string> names;
    while (rs->next()) {
      names.push_back(rs->getString(1).asStdString());
      CHECK(rs->getString(2).asStdString() == "InnoDB");
      CHECK(rs->getString(3).asStdString() == "utf8mb4_bin");
    }
    CHECK(names == std::vector<std::string>{"seqd_conv", "seqd_conv_member", "seqd_message"});
    rs.reset(st->executeQuery(
        "SELECT INDEX_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX), MIN(NON_UNIQUE) "
        "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND "
        "TABLE_NAME = 'seqd_message' GROUP BY INDEX_NAME ORDER BY INDEX_NAME"));
    std::map<std::string, std::string> keys;
    while (rs->next()) {
      keys[rs->getString(1).asStdString()] = rs->getString(2).asStdString();
      CHECK(rs->getInt(3) == 0);
    }
    CHECK(keys["PRIMARY"] == "conv_id,seq");
    CHECK(keys["uk_seqd_message_client"] == "conv_id,sender_id,client_msg_id");
    CHECK(keys.count("uk_seqd_message_server_id") == 0);
    CHECK(keys.size() == 2);
  }

  TEST_CASE("mariadb: throughput of the fast path (batches of 1024 over 64 conversations)") {
    MysqlBackend b;
    MessageStore& s = b.store();
    std::vector<std::string> convs;
    for (int i = 0; i < 64; ++i) convs.push_back(UniqueName("tp"));
    const std::string payload(100, 'p');
    MaxSeqCache cache;
    const int kBatches = 30;
    std::vector<std::vector<AppendRequest>> batches(kBatches);
    for (int k = 0; k < kBatches; ++k) {
      for (int i = 0; i < 1024; ++i) {
        batches[k].push_back(
            Req(convs[(k * 1024 + i) % convs.size()], "u", Num("m", k * 1024 + i), payload));
      }
    }
    const auto start = std::chrono::steady_clock::now();
    for (const auto& batch : batches) MustAppend(s, batch, cache);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE("fast path, one writer: ", static_cast<int64_t>(kBatches * 1024 / secs),
            " messages/s (", kBatches, " x 1024 in ", secs, " s)");
    for (const auto& c : convs) CHECK(cache[c] == kBatches * 1024 / 64);
  }
}

}  // namespace seqd
