// A fake seqd binary-protocol server for client tests: Asio + the codec on
// its own thread, with knobs for the misbehaviour a test needs.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "proto/binary_codec.h"
#include "proto/cluster_codec.h"
#include "proto/snowflake_codec.h"
#include "seqd/client.h"

namespace seqd::testing {

struct FakeOptions {
  int store_unavailable_first = 0;  // answer STORE_UNAVAILABLE to the first n NEXT_IDS
  int drop_first = 0;               // close the connection on the first n NEXT_IDS
  bool unknown_key = false;         // answer UNKNOWN_KEY to every NEXT_IDS
  bool ignore = false;              // never answer NEXT_IDS
  size_t reorder_batch = 0;         // hold answers until this many, then send them reversed
  int delay_ms = 0;                 // answer each request after this long
  bool close_on_accept = false;     // accept and close at once
  bool shutting_down = false;       // answer SHUTTING_DOWN to NEXT_IDS, then close
  int not_serving_first = 0;        // answer NOT_SERVING to the first n SNOWFLAKE
  bool snowflake_short = false;     // answer SNOWFLAKE with one ID fewer than asked
  bool snowflake_unsorted = false;  // answer SNOWFLAKE with its IDs in descending order
  uint16_t port = 0;                // listen on this port (0: any free one)
  // Store groups: answer PLACEMENT with FakeServer::placement and, on a
  // connection that sent it, push it before the next answer when it rose
  // (as seqd does); off: PLACEMENT and CLUSTER_MAP are unknown opcodes (a
  // server before them).
  bool store_groups = false;
};

class FakeServer {
 public:
  explicit FakeServer(FakeOptions options = {})
      : options_(options),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), options.port}) {
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeServer() {
    io_.stop();
    thread_.join();
  }

  uint16_t port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

  std::atomic<int> connections{0};
  std::atomic<int> next_ids_requests{0};
  std::atomic<int> pings{0};
  std::atomic<int> snowflake_requests{0};  // SNOWFLAKE and SNOWFLAKE_DECODE
  std::atomic<uint32_t> last_count{0};
  std::atomic<int> max_outstanding{0};  // most unanswered requests seen on one connection
  std::atomic<int> first_opcode{-1};    // the opcode of the last connection's first frame
  // Store groups (FakeOptions::store_groups): the server's placement
  // version; CLUSTER_MAP requests answered (an empty map of 4 shards).
  std::atomic<int64_t> placement{0};
  std::atomic<int> cluster_map_requests{0};

  // Writes `frames` before the next answer the server writes, on whichever
  // connection that is (any thread may call it).
  void PushRaw(std::string frames) {
    boost::asio::post(io_, [this, frames = std::move(frames)] { raw_pushes_ = frames; });
  }

  // Every request frame received, in order: its opcode and, for
  // PLACEMENT, the version told (else -1). Any thread.
  std::vector<std::pair<uint8_t, int64_t>> Received() {
    std::lock_guard<std::mutex> lock(received_mu_);
    return received_;
  }

 private:
  using tcp = boost::asio::ip::tcp;

  struct Conn : std::enable_shared_from_this<Conn> {
    explicit Conn(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    std::string in;
    std::string out, writing;
    bool write_in_flight = false;
    std::vector<std::string> held;
    int outstanding = 0;
    bool seen_frame = false;
    bool placement_pushes = false;  // the connection sent PLACEMENT
    int64_t told_placement = 0;     // pushed or answered on this connection
    char buf[8192];
  };

  void Accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec) return;
      ++connections;
      if (options_.close_on_accept) {
        socket.close();
      } else {
        auto conn = std::make_shared<Conn>(std::move(socket));
        Read(conn);
      }
      Accept();
    });
  }

  void Read(const std::shared_ptr<Conn>& c) {
    c->socket.async_read_some(boost::asio::buffer(c->buf),
                              [this, c](const boost::system::error_code& ec, size_t n) {
                                if (ec) return;
                                c->in.append(c->buf, n);
                                if (!Process(c)) return;
                                Read(c);
                              });
  }

  // False when the connection was closed.
  bool Process(const std::shared_ptr<Conn>& c) {
    for (;;) {
      proto::DecodeResult r = proto::DecodeFrame(c->in);
      if (r.state == proto::DecodeState::kNeedMore) return true;
      if (r.state == proto::DecodeState::kError) {
        c->socket.close();
        return false;
      }
      std::string frame_out;
      const proto::FrameView& f = r.frame;
      if (!c->seen_frame) {
        c->seen_frame = true;
        first_opcode = f.opcode;
      }
      {
        std::lock_guard<std::mutex> lock(received_mu_);
        const bool told = f.opcode == static_cast<uint8_t>(proto::kOpPlacement);
        received_.emplace_back(f.opcode,
                               told ? proto::ParsePlacementVersion(f.payload).value_or(-2) : -1);
      }
      bool answer = true;
      if (options_.store_groups && f.opcode == static_cast<uint8_t>(proto::kOpPlacement)) {
        c->placement_pushes = true;
        c->told_placement = std::max(c->told_placement, placement.load());
        proto::AppendOkPlacement(frame_out, f.request_id, c->told_placement);
      } else if (options_.store_groups && f.opcode == static_cast<uint8_t>(proto::kOpClusterMap)) {
        ++cluster_map_requests;
        proto::ClusterMapWire map;
        map.shards = 4;
        proto::AppendOkClusterMap(frame_out, f.request_id, map);
      } else if (f.opcode == static_cast<uint8_t>(proto::Opcode::kPing)) {
        ++pings;
        proto::AppendOkPing(frame_out, f.request_id, f.payload);
      } else if (f.opcode == static_cast<uint8_t>(proto::Opcode::kNextIds)) {
        const int n = ++next_ids_requests;
        auto req = proto::ParseNextIdsRequest(f.payload);
        if (!req) {
          proto::AppendError(frame_out, proto::Opcode::kNextIds, f.request_id,
                             proto::Status::kInvalidArgument, "bad payload");
        } else if (n <= options_.drop_first) {
          c->socket.close();
          return false;
        } else if (n <= options_.drop_first + options_.store_unavailable_first) {
          proto::AppendError(frame_out, proto::Opcode::kNextIds, f.request_id,
                             proto::Status::kStoreUnavailable, "store down");
        } else if (options_.shutting_down) {
          proto::AppendError(frame_out, proto::Opcode::kNextIds, f.request_id,
                             proto::Status::kShuttingDown, "draining");
          boost::asio::write(c->socket, boost::asio::buffer(frame_out));
          c->socket.close();
          return false;
        } else if (options_.unknown_key) {
          proto::AppendError(frame_out, proto::Opcode::kNextIds, f.request_id,
                             proto::Status::kUnknownKey,
                             "unknown key '" + std::string(req->key) + "'");
        } else if (options_.ignore) {
          answer = false;
        } else {
          last_count = req->count;
          int64_t& next = counters_[std::string(req->key)];
          proto::IdRangeWire range{next + 1, next + static_cast<int64_t>(req->count)};
          next += req->count;
          proto::AppendOkNextIds(frame_out, f.request_id, &range, 1);
        }
      } else if (proto::IsSnowflakeOpcode(f.opcode)) {
        ++snowflake_requests;
        Snowflake(f, frame_out);
      } else {
        proto::AppendError(frame_out, static_cast<proto::Opcode>(f.opcode), f.request_id,
                           proto::Status::kUnknownOpcode, "unknown opcode");
      }
      c->in.erase(0, r.consumed);
      if (!answer) continue;
      ++c->outstanding;
      max_outstanding = std::max(max_outstanding.load(), c->outstanding);
      if (options_.reorder_batch > 0) {
        c->held.push_back(std::move(frame_out));
        if (c->held.size() >= options_.reorder_batch) {
          for (auto it = c->held.rbegin(); it != c->held.rend(); ++it) Send(c, std::move(*it));
          c->held.clear();
        }
      } else if (options_.delay_ms > 0) {
        auto timer = std::make_shared<boost::asio::steady_timer>(
            io_, std::chrono::milliseconds(options_.delay_ms));
        timer->async_wait([this, c, timer,
                           frame = std::move(frame_out)](const boost::system::error_code&) mutable {
          Send(c, std::move(frame));
        });
      } else {
        Send(c, std::move(frame_out));
      }
    }
  }

  // SNOWFLAKE: IDs (worker 7 of Leaf's layout) from a counter, after the
  // NOT_SERVING answers asked for. SNOWFLAKE_DECODE: Leaf's layout.
  void Snowflake(const proto::FrameView& f, std::string& out) {
    constexpr int64_t kEpochMs = 1288834974657;
    if (static_cast<proto::Opcode>(f.opcode) == proto::kOpSnowflakeDecode) {
      std::optional<int64_t> id = proto::ParseSnowflakeDecodeRequest(f.payload);
      if (!id || *id < 0) {
        return proto::AppendError(out, proto::kOpSnowflakeDecode, f.request_id,
                                  proto::Status::kInvalidArgument, "not a snowflake ID");
      }
      return proto::AppendOkSnowflakeDecode(
          out, f.request_id, {(*id >> 22) + kEpochMs, (*id >> 12) & 1023, *id & 4095});
    }
    std::optional<uint32_t> count = proto::ParseSnowflakeRequest(f.payload);
    if (!count || *count < 1 || *count > 4096) {
      return proto::AppendError(out, proto::kOpSnowflake, f.request_id,
                                proto::Status::kInvalidArgument, "count must be in [1, 4096]");
    }
    if (not_serving_answers_ < options_.not_serving_first) {
      ++not_serving_answers_;
      return proto::AppendError(out, proto::kOpSnowflake, f.request_id, proto::Status::kNotServing,
                                "no worker id leased yet");
    }
    std::vector<int64_t> ids;
    for (uint32_t i = 0; i < *count; ++i) {
      ids.push_back((snowflake_ms_ << 22) | (7 << 12) | snowflake_sequence_);
      if (++snowflake_sequence_ == 4096) {
        snowflake_sequence_ = 0;
        ++snowflake_ms_;
      }
    }
    if (options_.snowflake_short) ids.pop_back();
    if (options_.snowflake_unsorted) std::reverse(ids.begin(), ids.end());
    proto::AppendOkSnowflake(out, f.request_id, ids.data(), ids.size());
  }

  void Send(const std::shared_ptr<Conn>& c, std::string frame) {
    --c->outstanding;
    c->out += std::exchange(raw_pushes_, std::string());
    const int64_t version = placement.load();
    if (c->placement_pushes && version > c->told_placement) {
      c->told_placement = version;
      proto::AppendPlacementPush(c->out, version);
    }
    c->out += frame;
    Flush(c);
  }

  void Flush(const std::shared_ptr<Conn>& c) {
    if (c->write_in_flight || c->out.empty() || !c->socket.is_open()) return;
    c->writing.swap(c->out);
    c->out.clear();
    c->write_in_flight = true;
    boost::asio::async_write(c->socket, boost::asio::buffer(c->writing),
                             [this, c](const boost::system::error_code& ec, size_t) {
                               c->write_in_flight = false;
                               c->writing.clear();
                               if (!ec) Flush(c);
                             });
  }

  FakeOptions options_;
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::map<std::string, int64_t> counters_;
  int not_serving_answers_ = 0;
  int64_t snowflake_ms_ = 1'000'000'000;  // since the epoch (2010-11-16)
  int64_t snowflake_sequence_ = 0;
  std::string raw_pushes_;  // PushRaw's frames not written yet (server thread)
  std::mutex received_mu_;
  std::vector<std::pair<uint8_t, int64_t>> received_;  // guarded by received_mu_
  std::thread thread_;
};

// A port nothing listens on (bound once, then released).
inline std::string ClosedEndpoint() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t port = a.local_endpoint().port();
  a.close();
  return "127.0.0.1:" + std::to_string(port);
}

// Options for a client of FakeServers at `endpoints`: a 2 s call timeout,
// a 1 s connect timeout, and retries after 5 ms backing off to 50 ms.
inline seqd::client::ClientOptions QuickRetryOptions(std::vector<std::string> endpoints) {
  using namespace std::chrono_literals;
  seqd::client::ClientOptions o;
  o.endpoints = std::move(endpoints);
  o.call_timeout = 2000ms;
  o.connect_timeout = 1000ms;
  o.backoff_initial = 5ms;
  o.backoff_max = 50ms;
  return o;
}

// An io_context running on its own thread, for AsyncClient tests: from
// construction until destruction, which stops it and joins the thread.
struct IoThread {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~IoThread() {
    work.reset();
    io.stop();
    thread.join();
  }
};

}  // namespace seqd::testing
