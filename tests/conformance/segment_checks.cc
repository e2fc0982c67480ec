// The checks of segment_checks.h.
#include "tests/conformance/segment_checks.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "storage/segment_store.h"
#include "tests/conformance/conformance_support.h"

namespace seqd::conformance {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

void CheckCrud(Backend& b) {
  SegmentStore& s = b.store();
  REQUIRE_OK(s.Ping());
  REQUIRE_OK(s.EnsureSchema());  // idempotent
  const std::string k = UniqueName("crud");

  auto created = s.CreateKey(k, 100, "first key");
  REQUIRE_OK(created);
  CHECK(created->key == k);
  CHECK(created->max_id == 1);
  CHECK(created->step == 100);
  CHECK(created->description == "first key");

  auto got = s.GetKey(k);
  REQUIRE_OK(got);
  CHECK(got->key == k);
  CHECK(got->max_id == 1);
  CHECK(got->step == 100);
  CHECK(got->description == "first key");
  if (b.tracks_update_time()) {
    CHECK_MESSAGE(std::llabs(got->update_time_ms - NowMs()) < 10 * 60 * 1000,
                  "update_time_ms=", got->update_time_ms, " now=", NowMs());
  }

  CHECK_ERR(s.CreateKey(k, 5, "again"), ErrorCode::kKeyExists);
  auto still = s.GetKey(k);
  REQUIRE_OK(still);
  CHECK(still->step == 100);
  CHECK(still->description == "first key");

  auto set = s.SetStep(k, 500);
  REQUIRE_OK(set);
  CHECK(set->step == 500);
  CHECK(set->max_id == 1);
  CHECK(set->key == k);
  REQUIRE_OK(s.SetStep(k, 500));  // same value: still a known key
  got = s.GetKey(k);
  REQUIRE_OK(got);
  CHECK(got->step == 500);

  const std::string missing = UniqueName("missing");
  CHECK_ERR(s.GetKey(missing), ErrorCode::kUnknownKey);
  CHECK_ERR(s.SetStep(missing, 10), ErrorCode::kUnknownKey);
  CHECK_ERR(s.Reserve(missing, std::nullopt), ErrorCode::kUnknownKey);
  CHECK_ERR(s.Reserve(missing, 1000), ErrorCode::kUnknownKey);
  CHECK_ERR(s.GetKey(missing), ErrorCode::kUnknownKey);  // Reserve created nothing

  auto empty_desc = s.CreateKey(UniqueName("nodesc"), 7, "");
  REQUIRE_OK(empty_desc);
  CHECK(empty_desc->description.empty());
}

void CheckListPaging(Backend& b) {
  SegmentStore& s = b.store();
  const std::string prefix = UniqueName("list") + "/";
  const std::vector<std::string> names = {prefix + "a", prefix + "b", prefix + "c", prefix + "d",
                                          prefix + "e"};
  // Created out of order: listing must sort.
  for (int i : {3, 0, 4, 1, 2}) REQUIRE_OK(s.CreateKey(names[i], 10 + i, "k" + std::to_string(i)));

  auto is_ours = [&](const KeyRow& r) { return r.key.rfind(prefix, 0) == 0; };
  std::vector<std::vector<std::string>> pages;
  std::string after = prefix;
  for (int guard = 0; guard < 10; ++guard) {
    auto page = s.ListKeys(after, 2);
    REQUIRE_OK(page);
    CHECK(page->size() <= 2);
    std::vector<std::string> mine;
    for (const KeyRow& r : *page) {
      if (is_ours(r)) mine.push_back(r.key);
    }
    if (mine.empty()) break;
    pages.push_back(mine);
    after = page->back().key;
  }
  REQUIRE(pages.size() == 3);
  CHECK(pages[0] == std::vector<std::string>{names[0], names[1]});
  CHECK(pages[1] == std::vector<std::string>{names[2], names[3]});
  CHECK(pages[2] == std::vector<std::string>{names[4]});

  auto all = s.ListKeys(prefix, 100);
  REQUIRE_OK(all);
  std::vector<KeyRow> rows;
  for (const KeyRow& r : *all) {
    if (is_ours(r)) rows.push_back(r);
  }
  REQUIRE(rows.size() == 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(rows[i].key == names[i]);
    CHECK(rows[i].step == 10 + i);
    CHECK(rows[i].max_id == 1);
    CHECK(rows[i].description == "k" + std::to_string(i));
  }

  auto none = s.ListKeys(prefix, 0);
  REQUIRE_OK(none);
  CHECK(none->empty());
  auto after_last = s.ListKeys(names[4], 10);
  REQUIRE_OK(after_last);
  for (const KeyRow& r : *after_last) CHECK_FALSE(is_ours(r));
}

void CheckSegment(const Result<ReservedSegment>& r, int64_t first, int64_t last, int64_t step) {
  REQUIRE_MESSAGE(r.ok(), Describe(r));
  CHECK(r->first == first);
  CHECK(r->last == last);
  CHECK(r->table_step == step);
}

void CheckReserveSequence(Backend& b) {
  SegmentStore& s = b.store();
  const std::string k = UniqueName("reserve");
  REQUIRE_OK(s.CreateKey(k, 100, ""));
  CheckSegment(s.Reserve(k, std::nullopt), 1, 100, 100);
  CheckSegment(s.Reserve(k, std::nullopt), 101, 200, 100);
  CheckSegment(s.Reserve(k, 1000), 201, 1200, 100);
  CheckSegment(s.Reserve(k, std::nullopt), 1201, 1300, 100);
  auto row = s.GetKey(k);
  REQUIRE_OK(row);
  CHECK(row->max_id == 1301);
  CHECK(row->step == 100);

  REQUIRE_OK(s.SetStep(k, 50));
  CheckSegment(s.Reserve(k, std::nullopt), 1301, 1350, 50);
  CheckSegment(s.Reserve(k, 1), 1351, 1351, 50);

  // Another key is independent.
  const std::string k2 = UniqueName("reserve-other");
  REQUIRE_OK(s.CreateKey(k2, 3, ""));
  CheckSegment(s.Reserve(k2, std::nullopt), 1, 3, 3);
  CheckSegment(s.Reserve(k, std::nullopt), 1352, 1401, 50);
}

void CheckReserveMany(Backend& b) {
  SegmentStore& s = b.store();
  const std::string k1 = UniqueName("many-a");
  const std::string k2 = UniqueName("many-b");
  REQUIRE_OK(s.CreateKey(k1, 100, ""));
  REQUIRE_OK(s.CreateKey(k2, 3, ""));
  // Several ranges of one key in one batch come out in request order.
  auto got = s.ReserveMany({{k1, std::nullopt, {}},
                            {UniqueName("many-missing"), std::nullopt, {}},
                            {k2, 5, {}},
                            {k1, std::nullopt, {}},
                            {k1, 1000, {}}});
  REQUIRE(got.size() == 5);
  CheckSegment(got[0], 1, 100, 100);
  CHECK_ERR(got[1], ErrorCode::kUnknownKey);
  CheckSegment(got[2], 1, 5, 3);
  CheckSegment(got[3], 101, 200, 100);
  CheckSegment(got[4], 201, 1200, 100);
  auto row = s.GetKey(k1);
  REQUIRE_OK(row);
  CHECK(row->max_id == 1201);
  // A batch of one, and the single-key call, continue the same sequence.
  auto one = s.ReserveMany({{k2, std::nullopt, {}}});
  REQUIRE(one.size() == 1);
  CheckSegment(one[0], 6, 8, 3);
  CheckSegment(s.Reserve(k2, std::nullopt), 9, 11, 3);

  // More keys than one statement takes (1024): created in one call, some
  // of them already there (left as they are), then reserved twice.
  constexpr size_t kKeys = 1100;
  const std::string prefix = UniqueName("many-bulk") + "-";
  std::vector<NewKey> keys;
  for (size_t i = 0; i < kKeys; ++i) {
    keys.push_back(NewKey{prefix + std::to_string(i), static_cast<int64_t>(1 + i % 7)});
  }
  REQUIRE_OK(s.CreateKey(keys[5].key, 50, "was there"));
  CheckSegment(s.Reserve(keys[5].key, std::nullopt), 1, 50, 50);
  REQUIRE_OK(s.CreateKeys(keys, "bulk"));
  std::vector<ReserveRequest> requests;
  for (const NewKey& k : keys) requests.push_back(ReserveRequest{k.key, std::nullopt, {}});
  for (int64_t round = 0; round < 2; ++round) {
    auto ranges = s.ReserveMany(requests);
    REQUIRE(ranges.size() == kKeys);
    for (size_t i = 0; i < kKeys; ++i) {
      CAPTURE(i);
      const int64_t step = i == 5 ? 50 : keys[i].step;
      const int64_t base = i == 5 ? 51 : 1;
      CheckSegment(ranges[i], base + round * step, base + (round + 1) * step - 1, step);
    }
  }
  auto kept = s.GetKey(keys[5].key);
  REQUIRE_OK(kept);
  CHECK(kept->description == "was there");
  auto last = s.GetKey(keys[kKeys - 1].key);
  REQUIRE_OK(last);
  CHECK(last->description == "bulk");
  CHECK(last->max_id == 1 + 2 * keys[kKeys - 1].step);
}

// One thread's ReserveMany answers: each range with its key number
// (order[j] for answer j) into `got`, the first error into `error`.
void Tally(const std::vector<Result<ReservedSegment>>& ranges, const std::vector<int>& order,
           std::vector<std::pair<int, ReservedSegment>>& got, std::string& error) {
  for (size_t j = 0; j < ranges.size(); ++j) {
    if (ranges[j]) {
      got.emplace_back(order[j], *ranges[j]);
    } else if (error.empty()) {
      error = Describe(ranges[j]);
    }
  }
}

// Every thread's ranges by key number; a thread's error fails the check.
std::vector<std::vector<ReservedSegment>> PerKey(
    int keys, const std::vector<std::vector<std::pair<int, ReservedSegment>>>& got,
    const std::vector<std::string>& errors) {
  std::vector<std::vector<ReservedSegment>> per_key(static_cast<size_t>(keys));
  for (size_t t = 0; t < got.size(); ++t) {
    CHECK_MESSAGE(errors[t].empty(), "thread ", t, ": ", errors[t]);
    for (const auto& [k, seg] : got[t]) per_key[static_cast<size_t>(k)].push_back(seg);
  }
  return per_key;
}

// A batch for ReserveMany: the key number of each request, and the requests.
struct NumberedBatch {
  std::vector<int> order;
  std::vector<ReserveRequest> requests;
};

// `threads` threads, each on an instance of its own, each reserving
// `batches` batches made by make_batch(rng) (rng seeded with the thread's
// number) with ReserveMany; returns each of `keys` keys' ranges, from every
// thread (PerKey: a thread's error fails the check).
template <typename MakeBatch>
std::vector<std::vector<ReservedSegment>> ReserveManyOnThreads(Backend& b, int threads, int batches,
                                                               int keys, MakeBatch make_batch) {
  std::vector<std::unique_ptr<SegmentStore>> stores;
  for (int t = 0; t < threads; ++t) stores.push_back(b.NewInstance());
  std::vector<std::vector<std::pair<int, ReservedSegment>>> got(threads);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int n = 0; n < batches; ++n) {
        NumberedBatch batch = make_batch(rng);
        Tally(stores[t]->ReserveMany(batch.requests), batch.order, got[t], errors[t]);
      }
    });
  }
  for (auto& th : running) th.join();
  return PerKey(keys, got, errors);
}

// Threads reserve overlapping batches of the same keys (each in its own
// order, some keys twice): per key, every range is disjoint from the others
// and together they cover 1..max_id-1.
void CheckConcurrentBatches(Backend& b) {
  constexpr int kThreads = 6;
  constexpr int kBatches = 30;
  constexpr int kKeys = 5;
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back(UniqueName("batches-" + std::to_string(i)));
    REQUIRE_OK(b.store().CreateKey(keys.back(), 10 + i, ""));
  }
  std::vector<std::vector<ReservedSegment>> per_key =
      ReserveManyOnThreads(b, kThreads, kBatches, kKeys, [&](std::mt19937& rng) {
        NumberedBatch batch;
        for (int i = 0; i < kKeys; ++i) batch.order.push_back(i);
        batch.order.push_back(static_cast<int>(rng() % kKeys));  // one key twice
        std::shuffle(batch.order.begin(), batch.order.end(), rng);
        for (int i : batch.order) {
          std::optional<int64_t> step;
          if (rng() % 2) step = 1 + static_cast<int64_t>(rng() % 20);
          batch.requests.push_back(ReserveRequest{keys[i], step, {}});
        }
        return batch;
      });
  for (int k = 0; k < kKeys; ++k) {
    auto& all = per_key[k];
    CHECK(all.size() >= static_cast<size_t>(kThreads * kBatches));
    std::sort(all.begin(), all.end(),
              [](const ReservedSegment& x, const ReservedSegment& y) { return x.first < y.first; });
    int64_t expect = 1;
    for (const ReservedSegment& seg : all) {
      CHECK(seg.first == expect);
      expect = seg.last + 1;
    }
    auto row = b.store().GetKey(keys[k]);
    REQUIRE_OK(row);
    CHECK(row->max_id == expect);
  }
}

// Requests that create their rows (create_step) get the first segment of a
// new row and the next one of a row already there, in one call; a key
// named twice gets two ranges in request order; an overflowing row fails
// alone and is left as it is.
void CheckCreateAndReserve(Backend& b) {
  SegmentStore& s = b.store();
  const std::string prefix = UniqueName("create-reserve") + "-";
  const std::string old_key = prefix + "old";
  REQUIRE_OK(s.CreateKey(old_key, 50, "was there"));
  CheckSegment(s.Reserve(old_key, std::nullopt), 1, 50, 50);
  const std::string twice = prefix + "twice";
  const std::string full = prefix + "full";
  REQUIRE_OK(s.CreateKey(full, 10, ""));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  REQUIRE_OK(s.Reserve(full, kMax - 5));  // max_id now kMax - 4: no room for 10 more
  // More new keys than one statement takes (1024).
  constexpr size_t kNew = 1100;
  std::vector<ReserveRequest> requests;
  for (size_t i = 0; i < kNew; ++i) {
    requests.push_back(ReserveRequest{
        prefix + std::to_string(i), std::nullopt, {}, static_cast<int64_t>(1 + i % 7), "auto"});
  }
  requests.push_back(ReserveRequest{old_key, std::nullopt, {}, 9, "auto"});
  requests.push_back(ReserveRequest{twice, std::nullopt, {}, 4, "auto"});
  requests.push_back(ReserveRequest{full, std::nullopt, {}, 10, "auto"});
  requests.push_back(ReserveRequest{twice, 6, {}, 4, "auto"});
  const std::string stepped = prefix + "stepped";  // new, with a step of its own
  requests.push_back(ReserveRequest{stepped, 6, {}, 4, "auto"});
  auto got = s.ReserveMany(requests);
  REQUIRE(got.size() == kNew + 5);
  for (size_t i = 0; i < kNew; ++i) {
    CAPTURE(i);
    CheckSegment(got[i], 1, 1 + static_cast<int64_t>(i % 7), 1 + static_cast<int64_t>(i % 7));
  }
  CheckSegment(got[kNew], 51, 100, 50);  // the row's own step, not the create_step
  CheckSegment(got[kNew + 1], 1, 4, 4);  // created, then its row's step
  CHECK_ERR(got[kNew + 2], ErrorCode::kInternal);
  CheckSegment(got[kNew + 3], 5, 10, 4);  // the same key again: the next range
  CheckSegment(got[kNew + 4], 1, 6, 4);   // the step asked for; the row keeps create_step
  auto stepped_row = s.GetKey(stepped);
  REQUIRE_OK(stepped_row);
  CHECK(stepped_row->max_id == 7);
  CHECK(stepped_row->step == 4);
  auto old_row = s.GetKey(old_key);
  REQUIRE_OK(old_row);
  CHECK(old_row->description == "was there");
  CHECK(old_row->max_id == 101);
  auto full_row = s.GetKey(full);
  REQUIRE_OK(full_row);
  CHECK(full_row->max_id == kMax - 4);
  auto last = s.GetKey(prefix + std::to_string(kNew - 1));
  REQUIRE_OK(last);
  CHECK(last->description == "auto");
  CHECK(last->max_id == 1 + 1 + static_cast<int64_t>((kNew - 1) % 7));
  // Again: every row exists now and continues its sequence.
  auto again = s.ReserveMany({ReserveRequest{prefix + "3", std::nullopt, {}, 4, "auto"},
                              ReserveRequest{prefix + "new", std::nullopt, {}, 2, "auto"}});
  REQUIRE(again.size() == 2);
  CheckSegment(again[0], 5, 8, 4);
  CheckSegment(again[1], 1, 2, 2);
}

// Threads create and reserve the same new keys at once, each batch in its
// own order: per key, the ranges are disjoint and cover 1..max_id-1.
void CheckConcurrentCreates(Backend& b) {
  constexpr int kThreads = 6;
  constexpr int kBatches = 20;
  constexpr int kKeys = 40;
  const std::string prefix = UniqueName("concurrent-create") + "-";
  std::vector<std::vector<ReservedSegment>> per_key =
      ReserveManyOnThreads(b, kThreads, kBatches, kKeys, [&](std::mt19937& rng) {
        NumberedBatch batch;
        for (int i = 0; i < kKeys; ++i) {
          if (rng() % 2) batch.order.push_back(i);
        }
        std::shuffle(batch.order.begin(), batch.order.end(), rng);
        for (int i : batch.order) {
          batch.requests.push_back(
              ReserveRequest{prefix + std::to_string(i), std::nullopt, {}, 3 + i % 5, "auto"});
        }
        return batch;
      });
  for (int k = 0; k < kKeys; ++k) {
    CAPTURE(k);
    auto& all = per_key[k];
    std::sort(all.begin(), all.end(),
              [](const ReservedSegment& x, const ReservedSegment& y) { return x.first < y.first; });
    int64_t expect = 1;
    for (const ReservedSegment& seg : all) {
      CHECK(seg.first == expect);
      CHECK(seg.last - seg.first + 1 == 3 + k % 5);
      expect = seg.last + 1;
    }
    auto row = b.store().GetKey(prefix + std::to_string(k));
    if (all.empty()) continue;
    REQUIRE_OK(row);
    CHECK(row->max_id == expect);
  }
}

void CheckConcurrentDisjoint(Backend& b) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50;
  constexpr int64_t kRowStep = 10;
  constexpr int64_t kExplicitStep = 7;
  const std::string k = UniqueName("concurrent");
  REQUIRE_OK(b.store().CreateKey(k, kRowStep, "concurrency"));

  std::vector<std::unique_ptr<SegmentStore>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(b.NewInstance());
  std::vector<std::vector<ReservedSegment>> got(kThreads);
  std::vector<std::vector<std::string>> errors(kThreads);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      // Odd threads ask for an explicit step, even ones use the row's.
      const std::optional<int64_t> step =
          t % 2 ? std::optional<int64_t>(kExplicitStep) : std::nullopt;
      for (int i = 0; i < kPerThread; ++i) {
        auto r = stores[t]->Reserve(k, step);
        if (r.ok()) {
          got[t].push_back(*r);
        } else {
          errors[t].push_back(Describe(r));
        }
      }
    });
  }
  const auto start = Clock::now();
  go = true;
  for (auto& th : threads) th.join();
  MESSAGE((kThreads * kPerThread), " concurrent reserves in ",
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(),
          " ms");

  std::vector<ReservedSegment> all;
  for (int t = 0; t < kThreads; ++t) {
    CHECK_MESSAGE(errors[t].empty(), "thread ", t, ": ", errors[t].size(),
                  " errors, first: ", errors[t].empty() ? "" : errors[t][0]);
    for (const auto& seg : got[t]) {
      CHECK(seg.last - seg.first + 1 == (t % 2 ? kExplicitStep : kRowStep));
      all.push_back(seg);
    }
  }
  REQUIRE(all.size() == static_cast<size_t>(kThreads * kPerThread));
  std::sort(all.begin(), all.end(),
            [](const ReservedSegment& a, const ReservedSegment& z) { return a.first < z.first; });
  CHECK(all.front().first == 1);
  int gaps_or_overlaps = 0;
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i].first != all[i - 1].last + 1) ++gaps_or_overlaps;
  }
  CHECK_MESSAGE(gaps_or_overlaps == 0, "segments are not disjoint and contiguous");
  const int64_t total = kThreads / 2 * kPerThread * (kRowStep + kExplicitStep);
  CHECK(all.back().last == total);
  auto row = b.store().GetKey(k);
  REQUIRE_OK(row);
  CHECK(row->max_id == total + 1);
}

void CheckPersistence(Backend& b) {
  const std::string k = UniqueName("persist");
  REQUIRE_OK(b.store().CreateKey(k, 100, "survives"));
  CheckSegment(b.store().Reserve(k, std::nullopt), 1, 100, 100);
  {
    auto other = b.NewInstance();
    CheckSegment(other->Reserve(k, 50), 101, 150, 100);
  }
  b.Reopen();
  auto row = b.store().GetKey(k);
  REQUIRE_OK(row);
  CHECK(row->max_id == 151);
  CHECK(row->step == 100);
  CHECK(row->description == "survives");
  CheckSegment(b.store().Reserve(k, std::nullopt), 151, 250, 100);
  if (!b.durable()) MESSAGE("memory store: reopen is a no-op (nothing is durable)");
}

// OpenIM's per-key min seqs in their own table (seqd_min_seq), beside
// leaf_alloc and never in it.
void CheckMinSeqs(Backend& b) {
  SegmentStore& s = b.store();
  const std::string a = UniqueName("minseq-a"), c = UniqueName("minseq-c");
  std::string upper = a;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto get = [&](SegmentStore& st, std::vector<std::string> keys) {
    auto r = st.GetMinSeqs(keys);
    REQUIRE_OK(r);
    return *r;
  };
  CHECK(get(s, {a, c}) == std::vector<int64_t>{0, 0});
  REQUIRE_OK(s.SetMinSeqs({{a, 5}, {c, 0}}, {}));
  CHECK(get(s, {c, a, upper}) == std::vector<int64_t>{0, 5, 0});  // keys are case-sensitive
  REQUIRE_OK(s.SetMinSeqs({{a, 3}, {upper, 9}}, {}));             // set again: replaced
  CHECK(get(s, {a, upper}) == std::vector<int64_t>{3, 9});
  CHECK(s.GetKey(a).error().code == ErrorCode::kUnknownKey);  // leaf_alloc untouched
  // Max IDs: the last reserved (max_id - 1), 0 without a row, none created.
  const std::string r = UniqueName("maxid");
  REQUIRE_OK(s.CreateKey(r, 10, ""));
  {
    auto m = s.GetMaxIds({r, a, r});
    REQUIRE_OK(m);
    CHECK(*m == std::vector<int64_t>{0, 0, 0});
  }
  CheckSegment(s.Reserve(r, std::nullopt), 1, 10, 10);
  {
    auto m = s.GetMaxIds({a, r});
    REQUIRE_OK(m);
    CHECK(*m == std::vector<int64_t>{0, 10});
  }
  CHECK(s.GetKey(a).error().code == ErrorCode::kUnknownKey);
  // A full list (1000: not a power of two) in one transaction.
  std::vector<MinSeqValue> many;
  std::vector<std::string> keys;
  std::vector<int64_t> want;
  for (int i = 0; i < 1000; ++i) {
    many.push_back({UniqueName("minseq-m") + std::to_string(i), int64_t{1} << (i % 62)});
    keys.push_back(many.back().key);
    want.push_back(many.back().min_seq);
  }
  REQUIRE_OK(s.SetMinSeqs(many, {}));
  CHECK(get(s, keys) == want);
  // A fence that does not hold (or a store without cluster mode): refused,
  // nothing written.
  const Status fenced = s.SetMinSeqs({{a, 77}}, {ShardFence{4095, "nobody", 1}});
  CHECK_FALSE(fenced.ok());
  CHECK(get(s, {a}) == std::vector<int64_t>{3});
  {
    auto other = b.NewInstance();  // another process sharing the store
    CHECK(get(*other, {a, upper}) == std::vector<int64_t>{3, 9});
  }
  b.Reopen();
  CHECK(get(b.store(), {a, upper, c}) == std::vector<int64_t>{3, 9, 0});
}

void CheckBlockTokens(Backend& b) {
  SegmentStore& s = b.store();
  const std::string k = UniqueName("tok-a");
  const std::string other = UniqueName("tok-b");
  const std::string fresh = UniqueName("tok-new");
  auto request = [](const std::string& key, int64_t step, std::string_view token,
                    int64_t create_step = 0) {
    ReserveRequest r{key, step, {}, create_step, "tokens"};
    r.token = token;
    return r;
  };
  REQUIRE_OK(s.CreateKey(k, 100, ""));
  REQUIRE_OK(s.CreateKey(other, 100, ""));
  // Exact steps, each recorded under its token; a new row made in the same
  // call starts at 1 with exactly the step asked.
  auto got = s.ReserveMany({request(k, 3, "t1"), request(k, 2, "t2"), request(other, 4, "t1"),
                            request(fresh, 5, "t1", 50)});
  REQUIRE(got.size() == 4);
  CheckSegment(got[0], 1, 3, 100);
  CheckSegment(got[1], 4, 5, 100);
  CheckSegment(got[2], 1, 4, 100);
  CheckSegment(got[3], 1, 5, 50);
  for (const auto& r : got) CHECK_FALSE(r->replayed);
  // Again: the same ranges, replayed, nothing reserved; mixed with a new
  // request of the same key in the same batch, which continues after.
  auto again = s.ReserveMany(
      {request(k, 3, "t1"), request(k, 1, "t3"), request(fresh, 5, "t1", 50), request(k, 2, "t2")});
  REQUIRE(again.size() == 4);
  CHECK((again[0]->first == 1 && again[0]->last == 3 && again[0]->replayed));
  CHECK((again[1]->first == 6 && again[1]->last == 6 && !again[1]->replayed));
  CHECK((again[2]->first == 1 && again[2]->last == 5 && again[2]->replayed));
  CHECK((again[3]->first == 4 && again[3]->last == 5 && again[3]->replayed));
  auto row = s.GetKey(k);
  REQUIRE_OK(row);
  CHECK(row->max_id == 7);
  // Another count under a known token is refused; the batch's others go on.
  auto mismatch = s.ReserveMany({request(k, 4, "t1"), request(k, 1, "t4")});
  REQUIRE(mismatch.size() == 2);
  CHECK_ERR(mismatch[0], ErrorCode::kInvalidArgument);
  CheckSegment(mismatch[1], 7, 7, 100);
  // A token of a key that has no row: unknown, and nothing recorded.
  auto missing = s.ReserveMany({request(UniqueName("tok-missing"), 1, "t1")});
  CHECK_ERR(missing[0], ErrorCode::kUnknownKey);
  // Tokens compare byte for byte.
  auto cased = s.ReserveMany({request(k, 3, "T1")});
  CheckSegment(cased[0], 8, 10, 100);
  CHECK_FALSE(cased[0]->replayed);
  // Pruned, a token is new again.
  Result<int64_t> pruned = s.PruneBlockTokens(INT64_MAX);
  REQUIRE_OK(pruned);
  CHECK(*pruned >= 7);
  auto after = s.ReserveMany({request(k, 3, "t1")});
  CheckSegment(after[0], 11, 13, 100);
  CHECK_FALSE(after[0]->replayed);
  // Nothing younger than the cut is pruned.
  REQUIRE_OK(s.PruneBlockTokens(0));
  CHECK(s.ReserveMany({request(k, 3, "t1")})[0]->replayed);
  // One batch naming a new token twice (a retry queued behind its first
  // try): one range, the second answer a replay of it; another count under
  // it is refused; nothing else moves.
  const int64_t before = s.GetKey(k)->max_id;
  auto twice = s.ReserveMany({request(k, 2, "t-twice"), request(k, 1, "t-other"),
                              request(k, 2, "t-twice"), request(k, 5, "t-twice")});
  REQUIRE(twice.size() == 4);
  CheckSegment(twice[0], before, before + 1, 100);
  CHECK_FALSE(twice[0]->replayed);
  CheckSegment(twice[1], before + 2, before + 2, 100);
  REQUIRE_OK(twice[2]);
  CHECK((twice[2]->first == before && twice[2]->last == before + 1 && twice[2]->replayed));
  CHECK_ERR(twice[3], ErrorCode::kInvalidArgument);
  CHECK(s.GetKey(k)->max_id == before + 3);
}

void CheckAllocTimes(Backend& b) {
  SegmentStore& s = b.store();
  const std::string k = UniqueName("time-a");
  const std::string other = UniqueName("time-b");
  const std::string fresh = UniqueName("time-new");
  const std::string plain = UniqueName("time-plain");
  const std::string none = UniqueName("time-none");
  auto request = [](const std::string& key, int64_t step, bool stamp, std::string_view token = {},
                    int64_t create_step = 0) {
    ReserveRequest r{key, step, {}, create_step, "times"};
    r.token = token;
    r.stamp_time = stamp;
    return r;
  };
  auto times = [&](SegmentStore& st, const std::vector<std::string>& keys) {
    auto r = st.GetAllocTimes(keys);
    REQUIRE_OK(r);
    REQUIRE(r->size() == keys.size());
    return *r;
  };
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  REQUIRE_OK(s.CreateKey(k, 100, ""));
  REQUIRE_OK(s.CreateKey(other, 100, ""));
  REQUIRE_OK(s.CreateKey(plain, 100, ""));
  // No row: -1. A row never stamped: its update_time (0 where the store
  // keeps none).
  const std::vector<int64_t> before = times(s, {none, plain});
  CHECK(before[0] == -1);
  if (b.tracks_update_time()) {
    CHECK(before[1] > 0);
  } else {
    CHECK(before[1] == 0);
  }
  // Stamped by the reservation, a new row made in the same call too; the
  // store's clock is this machine's here.
  const int64_t asked = now_ms();
  auto got = s.ReserveMany({request(k, 3, true, "t1"), request(other, 2, true),
                            request(fresh, 4, true, {}, 50), request(plain, 5, false)});
  REQUIRE(got.size() == 4);
  for (const auto& r : got) REQUIRE_OK(r);
  const std::vector<int64_t> first = times(s, {k, other, fresh, none});
  for (size_t i = 0; i < 3; ++i) {
    CHECK(first[i] >= asked - 5000);
    CHECK(first[i] <= now_ms() + 5000);
  }
  CHECK(first[3] == -1);
  // Later blocks stamp later; a replayed token and an unstamped
  // reservation do not move the time; a refused request stamps nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto later = s.ReserveMany({request(other, 1, true), request(k, 3, true, "t1"),
                              request(k, 1, false), request(none, 1, true, "t9")});
  REQUIRE(later.size() == 4);
  CHECK(later[1]->replayed);
  CHECK_ERR(later[3], ErrorCode::kUnknownKey);
  const std::vector<int64_t> second = times(s, {k, other, none});
  CHECK(second[0] == first[0]);
  CHECK(second[1] > first[1]);
  CHECK(second[2] == -1);
  // Shared by another instance, and durable.
  {
    std::unique_ptr<SegmentStore> instance = b.NewInstance();
    CHECK(times(*instance, {k, other}) == std::vector<int64_t>{second[0], second[1]});
  }
  b.Reopen();
  if (b.durable()) {
    CHECK(times(b.store(), {k, other, fresh}) ==
          std::vector<int64_t>{second[0], second[1], first[2]});
  }
}

void CheckUserSeqs(Backend& b) {
  SegmentStore& s = b.store();
  const std::string user = UniqueName("user");
  const std::string other = "U" + user.substr(1);  // differs only in case: another user
  const std::string a = UniqueName("si_a");
  const std::string c = UniqueName("sg_c");
  const std::string upper = "T" + a.substr(1);  // differs only in case: another conversation
  auto get = [&](SegmentStore& st, std::string_view u, UserSeqField f,
                 const std::vector<std::string>& convs) {
    auto r = st.GetUserSeqs(u, f, convs);
    REQUIRE_OK(r);
    REQUIRE(r->size() == convs.size());
    return *r;
  };
  using F = UserSeqField;
  // Nothing set: 0 for every field.
  CHECK(get(s, user, F::kRead, {a, c}) == std::vector<int64_t>{0, 0});
  // Set: the field only; the others stay 0.
  REQUIRE_OK(s.SetUserSeqs(user, F::kMax, false, {{a, 40}, {c, 7}}));
  CHECK(get(s, user, F::kMax, {c, a}) == std::vector<int64_t>{7, 40});
  CHECK(get(s, user, F::kMin, {a}) == std::vector<int64_t>{0});
  CHECK(get(s, user, F::kRead, {a}) == std::vector<int64_t>{0});
  // Overwrite goes down as well as up; raise only goes up.
  REQUIRE_OK(s.SetUserSeqs(user, F::kMax, false, {{a, 30}}));
  REQUIRE_OK(s.SetUserSeqs(user, F::kRead, true, {{a, 12}, {c, 3}}));
  REQUIRE_OK(s.SetUserSeqs(user, F::kRead, true, {{a, 9}, {c, 5}}));
  CHECK(get(s, user, F::kMax, {a}) == std::vector<int64_t>{30});
  CHECK(get(s, user, F::kRead, {a, c}) == std::vector<int64_t>{12, 5});
  REQUIRE_OK(s.SetUserSeqs(user, F::kRead, false, {{a, 2}}));
  CHECK(get(s, user, F::kRead, {a}) == std::vector<int64_t>{2});
  REQUIRE_OK(s.SetUserSeqs(user, F::kMin, false, {{a, 1}}));
  // Users and conversations compare byte for byte.
  CHECK(get(s, other, F::kMax, {a}) == std::vector<int64_t>{0});
  CHECK(get(s, user, F::kMax, {upper}) == std::vector<int64_t>{0});
  REQUIRE_OK(s.SetUserSeqs(other, F::kMax, false, {{a, 99}}));
  CHECK(get(s, user, F::kMax, {a}) == std::vector<int64_t>{30});
  // A batch of 1000 in one call.
  std::vector<UserSeqValue> many;
  std::vector<std::string> many_convs;
  for (int i = 0; i < 1000; ++i) {
    many.push_back({a + "_" + std::to_string(i), i});
    many_convs.push_back(many.back().conv);
  }
  REQUIRE_OK(s.SetUserSeqs(user, F::kRead, true, many));
  const std::vector<int64_t> read_many = get(s, user, F::kRead, many_convs);
  CHECK(read_many[0] == 0);
  CHECK(read_many[999] == 999);
  // Shared by another instance, and durable.
  {
    std::unique_ptr<SegmentStore> instance = b.NewInstance();
    CHECK(get(*instance, user, F::kMax, {a, c}) == std::vector<int64_t>{30, 7});
  }
  b.Reopen();
  if (b.durable()) {
    SegmentStore& again = b.store();
    CHECK(get(again, user, F::kMax, {a, c}) == std::vector<int64_t>{30, 7});
    CHECK(get(again, user, F::kRead, {a, c}) == std::vector<int64_t>{2, 5});
    CHECK(get(again, user, F::kMin, {a, c}) == std::vector<int64_t>{1, 0});
  }
}

void CheckLeafCreatedTable(Backend& b) {
  b.InstallLeafTable();
  SegmentStore& s = b.store();
  auto row = s.GetKey(kLeafTag);
  REQUIRE_OK(row);
  CHECK(row->max_id == 1);
  CHECK(row->step == 2000);
  CHECK(row->description == kLeafDescription);
  if (b.tracks_update_time()) CHECK(row->update_time_ms > 0);
  CheckSegment(s.Reserve(kLeafTag, std::nullopt), 1, 2000, 2000);
  CheckSegment(s.Reserve(kLeafTag, std::nullopt), 2001, 4000, 2000);
  auto list = s.ListKeys("", 10);
  REQUIRE_OK(list);
  REQUIRE(!list->empty());
  CHECK(std::any_of(list->begin(), list->end(),
                    [](const KeyRow& r) { return r.key == kLeafTag && r.max_id == 4001; }));
  const std::string k = UniqueName("after-leaf");
  REQUIRE_OK(s.CreateKey(k, 10, ""));
  CheckSegment(s.Reserve(k, std::nullopt), 1, 10, 10);
}

}  // namespace seqd::conformance
