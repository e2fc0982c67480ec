// Client: the blocking API, an AsyncClient on a private io_context thread.
#include "seqd/client.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <future>
#include <thread>

namespace seqd {

namespace asio = boost::asio;

struct Client::Impl {
  explicit Impl(ClientOptions options)
      : work(io.get_executor()), async(io.get_executor(), std::move(options)) {
    thread = std::thread([this] { io.run(); });
  }
  ~Impl() {
    // Close() fails whatever is pending and releases every socket and timer;
    // once the work guard is gone, run() returns when nothing is left.
    async.Close();
    work.reset();
    thread.join();
  }

  // Runs `start(callback)` and waits for the callback's result.
  template <typename T, typename Start>
  ClientResult<T> Wait(Start start) {
    auto promise = std::make_shared<std::promise<ClientResult<T>>>();
    std::future<ClientResult<T>> future = promise->get_future();
    start([promise](ClientResult<T> result) { promise->set_value(std::move(result)); });
    return future.get();
  }

  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work;
  AsyncClient async;
  std::thread thread;
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Client::~Client() = default;

AsyncClient& Client::async() { return impl_->async; }

ClientResult<IdBatch> Client::NextIds(const std::string& key, uint32_t count) {
  return impl_->Wait<IdBatch>(
      [&](auto done) { impl_->async.NextIds(key, count, std::move(done)); });
}

ClientResult<int64_t> Client::NextId(const std::string& key) {
  ClientResult<IdBatch> batch = NextIds(key, 1);
  if (!batch.ok()) return ClientResult<int64_t>(batch.code(), batch.message());
  return ClientResult<int64_t>(batch->ranges.front().first);
}

ClientResult<std::chrono::microseconds> Client::Ping() {
  return impl_->Wait<std::chrono::microseconds>(
      [&](auto done) { impl_->async.Ping(std::move(done)); });
}

}  // namespace seqd
