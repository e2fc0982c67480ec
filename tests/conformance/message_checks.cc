// The checks of message_checks.h.
#include "tests/conformance/message_checks.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "storage/message_store.h"
#include "tests/conformance/conformance_support.h"

namespace seqd::message_conformance {

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
    for (const auto& [conv, max] : want) {
      const std::string& c = conv;  // clang 14 cannot capture a binding
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

  // Re-send in a later batch, with the same content and a new server id:
  // the original outcome, nothing stored.
  AppendRequest resend = Req(c, "alice", "x1", "one");
  AppendRequest same_client_other_sender = Req(c, "bob", "x1", "bob's");
  AppendRequest same_client_other_conv = Req(other_conv, "alice", "x1", "elsewhere");
  AppendRequest fresh = Req(c, "alice", "x3", "three");
  AppendRequest fresh_again = Req(c, "alice", "x3", "three");  // dup inside the batch
  AppendRequest resend2 = Req(c, "alice", "x2", "two");
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
  out = MustAppend(s, {Req(c, "alice", "x1", "one"), Req(c, "bob", "x1", "bob's")}, fresh_cache);
  CHECK(out[0].duplicate);
  CHECK_FALSE(out[0].conflict);
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

// A request whose client key holds a message with other content: refused
// (conflict), nothing stored for it, the rest of its batch stored; the same
// content is a duplicate, whatever came in between.
void CheckMessageIdConflicts(Backend& b) {
  MessageStore& s = b.store();
  const std::string c = UniqueName("conflict");
  MaxSeqCache cache;
  const std::string nul("a\0b", 3);
  auto first =
      MustAppend(s, {Req(c, "alice", "k1", "one", 1), Req(c, "alice", "k2", nul, 7)}, cache);
  const AppendOutcome stored_k1{1, first[0].server_msg_id, first[0].send_time_ms, true, false};
  const AppendOutcome conflict_k1{1, first[0].server_msg_id, first[0].send_time_ms, true, true};
  const AppendOutcome conflict_k2{2, first[1].server_msg_id, first[1].send_time_ms, true, true};

  // Each field that makes another message, in a batch with new messages.
  auto out = MustAppend(
      s,
      {Req(c, "alice", "k1", "other payload", 1), Req(c, "u", "n1"),
       Req(c, "alice", "k1", "one", 2), Req(c, "alice", "k2", "a", 7),
       Req(c, "alice", "k2", std::string("a\0c", 3), 7), Req(c, "alice", "k2", nul + " ", 7),
       Req(c, "alice", "k1", "", 1), Req(c, "u", "n2")},
      cache);
  CHECK(out[0] == conflict_k1);  // payload
  CHECK(out[1].seq == 3);
  CHECK_FALSE(out[1].duplicate);
  CHECK(out[2] == conflict_k1);  // content type
  CHECK(out[3] == conflict_k2);  // a prefix
  CHECK(out[4] == conflict_k2);  // one byte after a NUL
  CHECK(out[5] == conflict_k2);  // a trailing space
  CHECK(out[6] == conflict_k1);  // empty
  CHECK(out[7].seq == 4);
  CHECK(cache[c] == 4);

  // The same content is still a re-send, before and after a conflict in one
  // batch; with an empty cache too (the slow paths).
  MaxSeqCache none;
  out = MustAppend(s,
                   {Req(c, "alice", "k1", "one", 1), Req(c, "alice", "k1", "changed", 1),
                    Req(c, "alice", "k1", "one", 1)},
                   none);
  CHECK(out[0] == stored_k1);
  CHECK(out[1] == conflict_k1);
  CHECK(out[2] == stored_k1);

  // Within one batch: a later request is compared with what the first one
  // stored.
  out = MustAppend(s,
                   {Req(c, "bob", "b1", "first", 3), Req(c, "bob", "b1", "first", 3),
                    Req(c, "bob", "b1", "second", 3), Req(c, "bob", "b1", "first", 4)},
                   cache);
  CHECK(out[0].seq == 5);
  CHECK_FALSE(out[0].duplicate);
  CHECK(out[1] == AppendOutcome{5, out[0].server_msg_id, out[0].send_time_ms, true, false});
  CHECK(out[2] == AppendOutcome{5, out[0].server_msg_id, out[0].send_time_ms, true, true});
  CHECK(out[3] == AppendOutcome{5, out[0].server_msg_id, out[0].send_time_ms, true, true});

  // Nothing of the conflicts was stored: the rows hold the first contents.
  auto all = ReadAll(s, c);
  REQUIRE(all.size() == 5);
  CHECK(all[0].payload == "one");
  CHECK(all[0].content_type == 1);
  CHECK(all[1].payload == nul);
  CHECK(all[2].client_msg_id == "n1");
  CHECK(all[3].client_msg_id == "n2");
  CHECK(all[4].payload == "first");
  CHECK(all[4].content_type == 3);

  // Run again (a COMMIT with an unknown outcome): the same answers.
  const std::vector<AppendRequest> batch = {Req(c, "carol", "r1", "x"),
                                            Req(c, "alice", "k1", "not one")};
  MaxSeqCache before = cache;
  auto run = MustAppend(s, batch, cache);
  CHECK(run[1] == conflict_k1);
  auto again = MustAppend(s, batch, before);
  CHECK(again == run);

  // A recalled message has lost its content: any re-send is a duplicate.
  REQUIRE_OK(s.SetStatus(c, 2, MessageStatus::kRecalled));
  out = MustAppend(s, {Req(c, "alice", "k2", "anything", 9)}, cache);
  CHECK(out[0] == AppendOutcome{2, first[1].server_msg_id, first[1].send_time_ms, true, false});
  CHECK(ReadAll(s, c).size() == 6);
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
  // Store groups: a batch is one transaction per group (its poisoned part
  // fails alone); a re-send answers it whole (CheckRetriedAppend-style
  // checks of the other suites cover that).
  if (!b.atomic_batches()) return;
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

}  // namespace seqd::message_conformance
