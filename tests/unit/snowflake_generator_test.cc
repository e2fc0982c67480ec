// SnowflakeGenerator and SnowflakeLayout with a manual wall clock and a
// manual steady clock: every millisecond is moved by the test.
#include "server/snowflake/snowflake_generator.h"

#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <future>
#include <optional>
#include <set>
#include <thread>

#include "server/base/asio_clock.h"
#include "server/base/manual_clock.h"
#include "server/metrics/metrics.h"

using namespace seqd;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kT0 = 1'790'000'000'000;  // a wall time in 2026, unix ms

struct Outcome {
  int calls = 0;
  std::optional<std::vector<int64_t>> ids;
  std::optional<Error> error;
  SnowflakeGenerator::Callback Callback() {
    return [this](Result<SnowflakeIds> r) {
      ++calls;
      if (r) {
        ids.emplace(r->begin(), r->end());
      } else {
        error = r.error();
      }
    };
  }
};

struct Fixture {
  ManualWallClock wall{kT0};
  ManualClock clock;
  Metrics metrics{"test"};
  std::unique_ptr<SnowflakeGenerator> gen;

  explicit Fixture(SnowflakeOptions options = {}) {
    options.metrics = &metrics;
    gen = std::make_unique<SnowflakeGenerator>(wall, clock, options);
  }
  void GrantFor(int worker, std::chrono::milliseconds lease = 1h, int64_t not_before = 0) {
    gen->Grant(worker, not_before, kT0 + 3'600'000, clock.Now() + lease);
  }
  Outcome Next(int64_t count = 1) {
    Outcome o;
    gen->Next(count, o.Callback());
    return o;
  }
  // Moves both clocks forward together.
  void Tick(int64_t ms) {
    wall.Advance(ms);
    clock.Advance(std::chrono::milliseconds(ms));
  }
  std::string Render() { return metrics.Render(); }
};

void CheckAscending(const std::vector<int64_t>& ids) {
  for (size_t i = 1; i < ids.size(); ++i) CHECK(ids[i - 1] < ids[i]);
}

}  // namespace

TEST_CASE("snowflake layout: default is Leaf's, fields round-trip") {
  SnowflakeLayout layout;
  REQUIRE(layout.Validate().ok());
  CHECK(layout.epoch_ms == 1288834974657);
  const int64_t id = layout.Compose(kT0, 39, 3448);
  // Leaf's own decoding: time = id >> 22 + epoch, worker = bits 12..21, sequence = low 12 bits.
  CHECK((id >> 22) + layout.epoch_ms == kT0);
  CHECK(((id >> 12) & 1023) == 39);
  CHECK((id & 4095) == 3448);
  auto f = layout.Decode(id);
  REQUIRE(f.ok());
  CHECK(f->time_ms == kT0);
  CHECK(f->worker == 39);
  CHECK(f->sequence == 3448);
  CHECK(layout.max_id() == INT64_MAX);
  CHECK(layout.Decode(-1).error().code == ErrorCode::kInvalidArgument);

  SnowflakeLayout small{/*time_bits=*/40, /*worker_bits=*/8, /*sequence_bits=*/5, /*epoch_ms=*/0};
  REQUIRE(small.Validate().ok());
  CHECK(small.max_id() == (int64_t{1} << 53) - 1);
  CHECK_FALSE(small.Decode(small.max_id() + 1).ok());
  auto g = small.Decode(small.Compose(123456, 255, 31));
  REQUIRE(g.ok());
  CHECK(g->time_ms == 123456);
  CHECK(g->worker == 255);
  CHECK(g->sequence == 31);
}

TEST_CASE("snowflake layout: bad widths are refused with the field named") {
  auto msg = [](SnowflakeLayout l) {
    Status s = l.Validate();
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().code == ErrorCode::kInvalidArgument);
    return s.error().message;
  };
  CHECK(msg({0, 10, 12, 0}).find("time_bits") != std::string::npos);
  CHECK(msg({41, 0, 12, 0}).find("worker_bits") != std::string::npos);
  CHECK(msg({41, 21, 1, 0}).find("worker_bits") != std::string::npos);
  CHECK(msg({41, 10, 0, 0}).find("sequence_bits") != std::string::npos);
  CHECK(msg({42, 10, 12, 0}).find("at most 63") != std::string::npos);
  CHECK(msg({41, 10, 12, -1}).find("epoch") != std::string::npos);
}

TEST_CASE("snowflake: nothing is issued before a grant") {
  Fixture f;
  Outcome o = f.Next();
  REQUIRE(o.error);
  CHECK(o.error->code == ErrorCode::kNotServing);
  CHECK(o.error->message.find("no worker id") != std::string::npos);
  CHECK_FALSE(f.gen->status().serving);
}

TEST_CASE("snowflake: IDs carry the time, the worker id and a sequence") {
  Fixture f;
  f.GrantFor(5);
  Outcome o = f.Next(3);
  REQUIRE(o.ids);
  REQUIRE(o.ids->size() == 3);
  CheckAscending(*o.ids);
  for (int64_t i = 0; i < 3; ++i) {
    auto d = f.gen->Decode((*o.ids)[static_cast<size_t>(i)]);
    REQUIRE(d.ok());
    CHECK(d->time_ms == kT0);
    CHECK(d->worker == 5);
    CHECK(d->sequence == i);
  }
  f.Tick(1);
  Outcome next = f.Next();
  REQUIRE(next.ids);
  CHECK(f.gen->Decode(next.ids->front())->sequence == 0);
  CHECK(f.gen->Decode(next.ids->front())->time_ms == kT0 + 1);
  CHECK(next.ids->front() > o.ids->back());
  CHECK(f.gen->status().issued == 4);
  CHECK(f.Render().find("seqd_snowflake_ids_issued_total 4") != std::string::npos);
}

TEST_CASE("snowflake: count is bounded") {
  SnowflakeOptions options;
  options.max_count = 100;
  Fixture f(options);
  f.GrantFor(1);
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{101}, INT64_MAX}) {
    Outcome o = f.Next(bad);
    REQUIRE(o.error);
    CHECK(o.error->code == ErrorCode::kInvalidArgument);
  }
  CHECK(f.Next(100).ids->size() == 100);
}

TEST_CASE("snowflake: a used-up sequence waits for the next millisecond") {
  SnowflakeOptions options;
  options.layout = SnowflakeLayout{41, 10, 2, SnowflakeLayout::kLeafEpochMs};  // 4 per ms
  Fixture f(options);
  f.GrantFor(7);
  Outcome o = f.Next(10);
  CHECK(o.calls == 0);  // 4 issued, 6 to go
  CHECK(f.gen->status().parked == 1);
  Outcome behind = f.Next(1);  // parked behind the first (FIFO)
  CHECK(behind.calls == 0);
  f.clock.Advance(1ms);  // the timer fires, but the wall clock has not moved
  CHECK(o.calls == 0);
  f.wall.Advance(1);
  f.clock.Advance(1ms);
  CHECK(o.calls == 0);  // 8 of 10
  f.Tick(1);
  REQUIRE(o.calls == 1);
  REQUIRE(o.ids);
  REQUIRE(o.ids->size() == 10);
  CheckAscending(*o.ids);
  std::vector<int64_t> seqs, times;
  for (int64_t id : *o.ids) {
    seqs.push_back(f.gen->Decode(id)->sequence);
    times.push_back(f.gen->Decode(id)->time_ms - kT0);
  }
  CHECK(seqs == std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1});
  CHECK(times == std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2});
  REQUIRE(behind.ids);
  CHECK(behind.ids->front() > o.ids->back());
  CHECK(f.gen->status().sequence_waits == 1);
  CHECK(f.Render().find("seqd_snowflake_sequence_waits_total 1") != std::string::npos);
}

TEST_CASE("snowflake: a clock moved back within the bound waits, then continues") {
  Fixture f;  // max_backward_ms = 5
  f.GrantFor(2);
  Outcome first = f.Next();
  REQUIRE(first.ids);
  f.wall.Set(kT0 - 3);
  Outcome o = f.Next();
  CHECK(o.calls == 0);
  f.clock.Advance(3ms);  // retried: the wall clock is still behind
  CHECK(o.calls == 0);
  f.wall.Set(kT0);  // caught up with the last timestamp: the next sequence
  f.clock.Advance(3ms);
  REQUIRE(o.ids);
  CHECK(o.ids->front() > first.ids->front());
  CHECK(f.gen->Decode(o.ids->front())->sequence == 1);
  CHECK(f.gen->status().clock_back_waits == 1);
  CHECK(f.gen->status().clock_back_refusals == 0);
  CHECK(f.Render().find("seqd_snowflake_clock_backwards_total{outcome=\"waited\"} 1") !=
        std::string::npos);
}

TEST_CASE("snowflake: a clock moved back beyond the bound is refused and counted") {
  Fixture f;
  f.GrantFor(2);
  Outcome first = f.Next();
  REQUIRE(first.ids);
  f.wall.Set(kT0 - 6);
  Outcome o = f.Next();
  REQUIRE(o.error);
  CHECK(o.error->code == ErrorCode::kNotServing);
  CHECK(o.error->message.find("moved back by 6 ms") != std::string::npos);
  CHECK(f.gen->status().clock_back_refusals == 1);
  CHECK(f.Render().find("seqd_snowflake_clock_backwards_total{outcome=\"refused\"} 1") !=
        std::string::npos);
  f.wall.Set(kT0 + 1);  // past the last timestamp again: served
  Outcome later = f.Next();
  REQUIRE(later.ids);
  CHECK(later.ids->front() > first.ids->front());
}

TEST_CASE("snowflake: a clock that stays behind fails the request at the deadline") {
  Fixture f;
  f.GrantFor(2);
  REQUIRE(f.Next().ids);
  f.wall.Set(kT0 - 5);
  Outcome o = f.Next();
  CHECK(o.calls == 0);
  f.clock.Advance(1100ms);  // the wall clock never moves
  REQUIRE(o.error);
  CHECK(o.error->code == ErrorCode::kNotServing);
  CHECK(o.error->message.find("gave up waiting") != std::string::npos);
}

TEST_CASE("snowflake: at start, IDs wait until the clock passes the previous holder's bound") {
  Fixture f;
  f.gen->Grant(3, /*not_before_ms=*/kT0 + 50, kT0 + 3'600'000, f.clock.Now() + 1h);
  Outcome o = f.Next();
  CHECK(o.calls == 0);
  f.Tick(50);  // wall == not_before: still not past it
  CHECK(o.calls == 0);
  f.Tick(1);
  REQUIRE(o.ids);
  CHECK(f.gen->Decode(o.ids->front())->time_ms == kT0 + 51);

  Fixture far;
  far.gen->Grant(3, kT0 + 5000, kT0 + 3'600'000, far.clock.Now() + 1h);
  Outcome refused = far.Next();
  REQUIRE(refused.error);
  CHECK(refused.error->code == ErrorCode::kNotServing);
  CHECK(refused.error->message.find("5001 ms left") != std::string::npos);
}

TEST_CASE("snowflake: no IDs once the lease ran out; a renewal restores them") {
  Fixture f;
  f.GrantFor(4, 100ms);
  REQUIRE(f.Next().ids);
  f.Tick(99);
  REQUIRE(f.Next().ids);
  f.Tick(1);
  Outcome o = f.Next();
  REQUIRE(o.error);
  CHECK(o.error->code == ErrorCode::kNotServing);
  CHECK(o.error->message.find("not renewed in time") != std::string::npos);
  CHECK_FALSE(f.gen->status().serving);
  f.gen->Extend(kT0 + 3'600'000, f.clock.Now() + 100ms);
  CHECK(f.gen->status().serving);
  REQUIRE(f.Next().ids);
}

TEST_CASE("snowflake: nothing past the persisted time bound") {
  Fixture f;
  f.gen->Grant(4, 0, /*time_bound_ms=*/kT0 + 10, f.clock.Now() + 1h);
  f.Tick(10);
  REQUIRE(f.Next().ids);
  f.Tick(1);
  Outcome o = f.Next();
  REQUIRE(o.error);
  CHECK(o.error->message.find("time bound") != std::string::npos);
  f.gen->Extend(kT0 + 20, f.clock.Now() + 1h);
  REQUIRE(f.Next().ids);
}

TEST_CASE("snowflake: revoke fails parked and new requests; a new worker id keeps IDs rising") {
  SnowflakeOptions options;
  options.layout = SnowflakeLayout{41, 10, 1, SnowflakeLayout::kLeafEpochMs};  // 2 per ms
  Fixture f(options);
  f.GrantFor(9);
  Outcome first = f.Next(2);
  REQUIRE(first.ids);
  Outcome parked = f.Next(1);
  CHECK(parked.calls == 0);
  f.gen->Revoke("worker id 9 was taken over");
  REQUIRE(parked.error);
  CHECK(parked.error->message == "worker id 9 was taken over");
  CHECK(f.Next().error->message == "worker id 9 was taken over");
  // A lower worker id in the same millisecond would give smaller IDs: the
  // generator moves to the next millisecond instead.
  f.GrantFor(1);
  Outcome o = f.Next();
  CHECK(o.calls == 0);
  f.Tick(1);
  REQUIRE(o.ids);
  CHECK(o.ids->front() > first.ids->back());
  CHECK(f.gen->Decode(o.ids->front())->worker == 1);
}

TEST_CASE("snowflake: shutdown fails parked requests") {
  SnowflakeOptions options;
  options.layout = SnowflakeLayout{41, 10, 1, SnowflakeLayout::kLeafEpochMs};
  Fixture f(options);
  f.GrantFor(1);
  Outcome o = f.Next(3);
  CHECK(o.calls == 0);
  f.gen->Shutdown();
  REQUIRE(o.error);
  CHECK(o.error->code == ErrorCode::kShuttingDown);
  CHECK(f.Next().error->code == ErrorCode::kShuttingDown);
  f.Tick(5);  // the armed timer finds nothing to do
  CHECK(o.calls == 1);
}

TEST_CASE("snowflake: threads on the real clocks get unique, per-thread increasing IDs") {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread timers([&] { io.run(); });
  AsioClock clock(io);
  SystemWallClock wall;
  SnowflakeOptions options;
  options.layout = SnowflakeLayout{41, 10, 4, SnowflakeLayout::kLeafEpochMs};  // 16 per ms
  SnowflakeGenerator gen(wall, clock, options);
  gen.Grant(3, 0, wall.NowMs() + 3'600'000, clock.Now() + 1h);

  constexpr int kThreads = 4, kPerThread = 2000;
  std::vector<std::vector<int64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::promise<Result<SnowflakeIds>> p;
        auto fut = p.get_future();
        gen.Next(1, [&p](Result<SnowflakeIds> r) { p.set_value(std::move(r)); });
        auto r = fut.get();
        if (r) got[static_cast<size_t>(t)].push_back(r->front());
      }
    });
  }
  for (auto& th : threads) th.join();
  work.reset();
  io.stop();
  timers.join();
  std::set<int64_t> all;
  for (const auto& ids : got) {
    CHECK(ids.size() == kPerThread);
    CheckAscending(ids);
    all.insert(ids.begin(), ids.end());
  }
  CHECK(all.size() == size_t{kThreads} * kPerThread);
  CHECK(gen.status().sequence_waits > 0);  // 8000 IDs at 16 per ms had to wait
}

TEST_CASE("snowflake: status says why a request now would be refused") {
  Fixture f;
  CHECK(f.gen->status().worker_id == -1);
  f.GrantFor(6);
  REQUIRE(f.Next().ids);
  CHECK(f.gen->status().serving);
  CHECK(f.gen->status().worker_id == 6);
  f.wall.Set(kT0 - 3);  // within the bound: still serving (a request would wait)
  CHECK(f.gen->status().serving);
  f.wall.Set(kT0 - 6);
  SnowflakeStatus back = f.gen->status();
  CHECK_FALSE(back.serving);
  CHECK(back.why_not.find("6 ms behind") != std::string::npos);
  f.wall.Set(kT0 + 3'600'001);  // past the persisted bound
  CHECK(f.gen->status().why_not.find("time bound") != std::string::npos);
  f.wall.Set(kT0 + 1);
  f.gen->Revoke("worker id 6 was taken over");
  CHECK(f.gen->status().worker_id == -1);  // none held now
  CHECK(f.gen->status().why_not == "worker id 6 was taken over");

  Fixture starting;
  starting.gen->Grant(2, kT0 + 500, kT0 + 3'600'000, starting.clock.Now() + 1h);
  CHECK(starting.gen->status().why_not.find("501 ms left") != std::string::npos);
}

TEST_CASE("snowflake: a timer left from a revoked grant does not delay the next wait") {
  SnowflakeOptions options;
  options.layout = SnowflakeLayout{41, 10, 1, SnowflakeLayout::kLeafEpochMs};  // 2 per ms
  Fixture f(options);
  f.gen->Grant(1, /*not_before_ms=*/kT0 + 900, kT0 + 3'600'000, f.clock.Now() + 1h);
  Outcome waiting = f.Next();  // parked for ~901 ms
  CHECK(waiting.calls == 0);
  f.gen->Revoke("worker id 1 was taken over");
  REQUIRE(waiting.error);
  f.GrantFor(2);
  Outcome o = f.Next(3);  // 2 now, 1 in the next millisecond
  CHECK(o.calls == 0);
  f.Tick(1);
  REQUIRE(o.ids);
  CHECK(o.ids->size() == 3);
}
