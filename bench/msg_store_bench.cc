// Messages durably stored per second, seqd's group commit next to a naive
// design, in one run against one MariaDB/MySQL database.
//
//   msg_store_bench --store mysql://user:pass@127.0.0.1:3306/db
//       [--senders 1024] [--convs 1000] [--duration 5] [--naive-threads 4,8,16,32]
//       [--payload 100] [--writers 2] [--anchor-batch 1000]
//
// seqd: MessageService over MysqlMessageStore. `senders` concurrent senders,
// each with one message in flight at a time (like as many client
// connections), over `convs` conversations.
// naive: for each count in `naive-threads`, that many threads, each on its
// own connection, one transaction per message: SELECT MAX(seq) ... FOR
// UPDATE, then INSERT. The best of them is the baseline.
// anchor: the database's own ceiling for these rows: `writers` connections
// (as many as seqd's writer threads), each inserting rows in transactions
// of `anchor-batch` rows, one multi-row INSERT per transaction. seqd's
// goal is at least 0.5x of it.
// All store the same columns with the same keys and durability settings.
#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/msg/message_service.h"
#include "storage/message_store_factory.h"
#include "storage/mysql/mysql_store.h"
#include "storage/store_factory.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string store;
  int senders = 1024;
  int convs = 1000;
  double duration_s = 5;
  std::vector<int> naive_threads = {4, 8, 16, 32};
  size_t payload = 100;
  int writers = 2;
  int anchor_batch = 1000;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "msg_store_bench: %s\nusage: msg_store_bench --store mysql://u:p@h:port/db "
               "[--senders N] [--convs N] [--duration S] [--naive-threads N] [--payload BYTES] "
               "[--writers N] [--anchor-batch ROWS]\n",
               why);
  std::exit(2);
}

// "4,8,16" -> {4, 8, 16}
std::vector<int> ParseList(const std::string& v) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t comma = std::min(v.find(',', pos), v.size());
    out.push_back(std::stoi(v.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return out;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) Usage(("missing value for " + flag).c_str());
    std::string v = argv[++i];
    if (flag == "--store")
      a.store = v;
    else if (flag == "--senders")
      a.senders = std::stoi(v);
    else if (flag == "--convs")
      a.convs = std::stoi(v);
    else if (flag == "--duration")
      a.duration_s = std::stod(v);
    else if (flag == "--naive-threads")
      a.naive_threads = ParseList(v);
    else if (flag == "--payload")
      a.payload = std::stoul(v);
    else if (flag == "--writers")
      a.writers = std::stoi(v);
    else if (flag == "--anchor-batch")
      a.anchor_batch = std::stoi(v);
    else
      Usage(("unknown flag " + flag).c_str());
  }
  if (a.store.rfind("mysql://", 0) != 0) Usage("--store must be a mysql:// URL");
  const bool bad_threads = a.naive_threads.empty() ||
                           *std::min_element(a.naive_threads.begin(), a.naive_threads.end()) < 1;
  if (a.senders < 1 || a.convs < 1 || bad_threads || a.duration_s <= 0 || a.writers < 1 ||
      a.anchor_batch < 1) {
    Usage("counts and duration must be positive");
  }
  return a;
}

// Latencies in microseconds; thread-safe.
class Latencies {
 public:
  void Add(int64_t us) {
    std::lock_guard lock(mu_);
    v_.push_back(us);
  }
  double Percentile(double p) {
    std::lock_guard lock(mu_);
    if (v_.empty()) return 0;
    std::sort(v_.begin(), v_.end());
    return v_[std::min(v_.size() - 1, static_cast<size_t>(p * v_.size()))] / 1000.0;
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> v_;
};

struct Figures {
  double per_second = 0;
  double p50_ms = 0, p99_ms = 0;
  int64_t errors = 0;
};

void Print(const char* name, const Figures& f) {
  std::printf("%-22s %8.0f messages/s   p50 %7.2f ms   p99 %7.2f ms   errors %lld\n", name,
              f.per_second, f.p50_ms, f.p99_ms, static_cast<long long>(f.errors));
}

// --- seqd: group commit ------------------------------------------------------

Figures RunSeqd(const Args& a) {
  auto segments = seqd::OpenStore(a.store);
  auto messages = seqd::OpenMessageStore(a.store);
  if (!segments || !messages) Usage("cannot open the store");
  if (auto s = (*segments)->EnsureSchema(); !s) Usage(s.error().message.c_str());
  if (auto s = (*messages)->EnsureSchema(); !s) Usage(s.error().message.c_str());
  seqd::MessageServiceOptions o;
  o.writers = a.writers;
  seqd::MessageService service(**messages, **segments, o);

  const std::string payload(a.payload, 'x');
  const std::string run = std::to_string(Clock::now().time_since_epoch().count());
  Latencies lat;
  std::atomic<int64_t> done_count{0}, errors{0};
  std::atomic<int> active{a.senders};
  std::mutex mu;
  std::condition_variable cv;
  const auto deadline = Clock::now() + std::chrono::duration<double>(a.duration_s);
  const auto start = Clock::now();

  struct Sender {
    int id;
    int64_t n = 0;
    std::mt19937 rng;
  };
  std::vector<std::unique_ptr<Sender>> senders;
  std::function<void(Sender*)> send_next = [&](Sender* s) {
    if (Clock::now() >= deadline) {
      if (--active == 0) cv.notify_all();
      return;
    }
    seqd::SendRequest r;
    r.conv_id = "bench_" + run + "_" + std::to_string(s->rng() % a.convs);
    // Appended, not "u" + string: GCC 12's -Wrestrict misfires on that.
    r.sender_id = std::string("u").append(std::to_string(s->id));
    r.client_msg_id = std::string("m").append(std::to_string(s->n++));
    r.content_type = 1;
    r.payload = payload;
    const auto sent = Clock::now();
    service.Send(std::move(r), [&, s, sent](seqd::Result<seqd::AppendOutcome> out) {
      lat.Add(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent).count());
      if (out)
        ++done_count;
      else
        ++errors;
      send_next(s);
    });
  };
  for (int i = 0; i < a.senders; ++i) {
    senders.push_back(std::make_unique<Sender>(Sender{i, 0, std::mt19937(i)}));
  }
  for (auto& s : senders) send_next(s.get());
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return active == 0; });
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  service.Shutdown();
  return {done_count / secs, lat.Percentile(0.5), lat.Percentile(0.99), errors};
}

// A connection to the first host of a.store's URL (the baselines talk to
// one host).
std::unique_ptr<sql::Connection> Connect(const Args& a) {
  auto options = seqd::MysqlStore::ParseUrl(a.store);
  if (!options) Usage(options.error().message.c_str());
  sql::ConnectOptionsMap props;
  props["hostName"] =
      "tcp://" + options->hosts.front().host + ":" + std::to_string(options->hosts.front().port);
  props["userName"] = options->user;
  props["password"] = options->password;
  props["schema"] = options->database;
  return std::unique_ptr<sql::Connection>(get_driver_instance()->connect(props));
}

// (Re)creates `table` with seqd_message's columns and keys.
void CreateMessageTable(const Args& a, const std::string& table) {
  auto c = Connect(a);
  std::unique_ptr<sql::Statement> s(c->createStatement());
  s->execute("DROP TABLE IF EXISTS " + table);
  s->execute("CREATE TABLE " + table +
             " (conv_id VARCHAR(128) NOT NULL, seq BIGINT NOT NULL, "
             "server_msg_id BIGINT NOT NULL AUTO_INCREMENT, sender_id VARCHAR(128) NOT NULL, "
             "client_msg_id VARCHAR(128) NOT NULL, content_type INT NOT NULL, payload MEDIUMBLOB "
             "NOT NULL, send_time BIGINT NOT NULL, status TINYINT NOT NULL DEFAULT 0, PRIMARY KEY "
             "(conv_id, seq), UNIQUE KEY uk_client (conv_id, sender_id, client_msg_id), UNIQUE KEY "
             "uk_server_msg_id (server_msg_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 "
             "COLLATE=utf8mb4_bin");
}

// --- anchor: batched inserts -------------------------------------------------

// The rows go to a copy of seqd's own message table (same columns, keys
// and engine), made with CREATE TABLE ... LIKE after seqd creates it.
Figures RunBatchedAnchor(const Args& a) {
  auto messages = seqd::OpenMessageStore(a.store);
  if (!messages) Usage("cannot open the store");
  if (auto s = (*messages)->EnsureSchema(); !s) Usage(s.error().message.c_str());
  {
    auto c = Connect(a);
    std::unique_ptr<sql::Statement> s(c->createStatement());
    s->execute("DROP TABLE IF EXISTS anchor_message");
    s->execute("CREATE TABLE anchor_message LIKE seqd_message");
  }
  const std::string payload(a.payload, 'x');  // no quoting needed
  std::atomic<int64_t> rows{0}, errors{0};
  const auto deadline = Clock::now() + std::chrono::duration<double>(a.duration_s);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < a.writers; ++t) {
    threads.emplace_back([&, t] {
      try {
        auto c = Connect(a);
        c->setAutoCommit(false);
        std::unique_ptr<sql::Statement> s(c->createStatement());
        std::mt19937 rng(t);
        std::vector<int64_t> next_seq(static_cast<size_t>(a.convs), 0);
        std::string sql;
        for (int64_t n = 0; Clock::now() < deadline;) {
          sql.assign(
              "INSERT INTO anchor_message (conv_id, seq, server_msg_id, sender_id, "
              "client_msg_id, content_type, payload, send_time_ms) VALUES ");
          for (int i = 0; i < a.anchor_batch; ++i, ++n) {
            const size_t conv = rng() % static_cast<size_t>(a.convs);
            if (i > 0) sql += ',';
            sql.append("('a").append(std::to_string(t)).append("_").append(std::to_string(conv));
            sql.append("',").append(std::to_string(++next_seq[conv]));
            sql.append(",").append(std::to_string((int64_t{t} << 40) + n));
            sql.append(",'u").append(std::to_string(t)).append("','m").append(std::to_string(n));
            sql.append("',1,'").append(payload).append("',0)");
          }
          s->execute(sql);
          c->commit();
          rows += a.anchor_batch;
        }
      } catch (const sql::SQLException& e) {
        std::fprintf(stderr, "anchor writer %d: %s\n", t, e.what());
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  return {rows / secs, 0, 0, errors};
}

// --- naive: one transaction per message --------------------------------------

Figures RunNaive(const Args& a, int naive_threads) {
  CreateMessageTable(a, "naive_message");
  auto connect = [&] { return Connect(a); };
  const std::string payload(a.payload, 'x');
  Latencies lat;
  std::atomic<int64_t> done_count{0}, errors{0};
  const auto deadline = Clock::now() + std::chrono::duration<double>(a.duration_s);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < naive_threads; ++t) {
    threads.emplace_back([&, t] {
      try {
        auto c = connect();
        c->setAutoCommit(false);
        std::unique_ptr<sql::PreparedStatement> max(c->prepareStatement(
            "SELECT COALESCE(MAX(seq), 0) FROM naive_message WHERE conv_id = ? FOR UPDATE"));
        std::unique_ptr<sql::PreparedStatement> ins(c->prepareStatement(
            "INSERT INTO naive_message (conv_id, seq, sender_id, client_msg_id, content_type, "
            "payload, send_time) VALUES (?, ?, ?, ?, 1, ?, ?)"));
        std::mt19937 rng(t);
        for (int64_t n = 0; Clock::now() < deadline; ++n) {
          const auto sent = Clock::now();
          const std::string conv = std::string("c").append(std::to_string(rng() % a.convs));
          try {
            max->setString(1, conv);
            std::unique_ptr<sql::ResultSet> rs(max->executeQuery());
            rs->next();
            const int64_t seq = rs->getInt64(1) + 1;
            ins->setString(1, conv);
            ins->setInt64(2, seq);
            ins->setString(3, std::string("u").append(std::to_string(t)));
            ins->setString(4, std::string("m").append(std::to_string(n)));
            ins->setString(5, payload);
            ins->setInt64(6, 0);
            ins->executeUpdate();
            c->commit();
            ++done_count;
          } catch (const sql::SQLException&) {
            c->rollback();  // deadlock or lock timeout: counted, like a failed send
            ++errors;
          }
          lat.Add(
              std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent).count());
        }
      } catch (const sql::SQLException& e) {
        std::fprintf(stderr, "naive sender %d: %s\n", t, e.what());
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  return {done_count / secs, lat.Percentile(0.5), lat.Percentile(0.99), errors};
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  std::printf("%d conversations, payload %zu B, %.1f s per run\n", a.convs, a.payload,
              a.duration_s);
  // The naive design at several thread counts: more threads commit more in
  // parallel but deadlock more (gap locks of SELECT ... FOR UPDATE). Its best
  // is the baseline.
  Figures best;
  int best_threads = 0;
  for (int threads : a.naive_threads) {
    const Figures f = RunNaive(a, threads);
    Print(("naive, " + std::to_string(threads) + " threads").c_str(), f);
    if (f.per_second > best.per_second) {
      best = f;
      best_threads = threads;
    }
  }
  const Figures anchor = RunBatchedAnchor(a);
  std::printf("%-22s %8.0f rows/s       (%d connections, %d rows per transaction)   errors %lld\n",
              "anchor, batched", anchor.per_second, a.writers, a.anchor_batch,
              static_cast<long long>(anchor.errors));
  const Figures ours = RunSeqd(a);
  Print(("seqd, " + std::to_string(a.senders) + " senders").c_str(), ours);
  std::printf("ratio seqd / best naive (%d threads): %.1f\n", best_threads,
              best.per_second > 0 ? ours.per_second / best.per_second : 0.0);
  std::printf("ratio seqd / batched anchor: %.2f (goal >= 0.5)\n",
              anchor.per_second > 0 ? ours.per_second / anchor.per_second : 0.0);
  return 0;
}
