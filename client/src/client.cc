// Client: the blocking API, an AsyncClient on a private io_context thread.
#include "seqd/client.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <future>
#include <thread>

namespace seqd::client {

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

int64_t Client::PlacementVersion() { return impl_->async.PlacementVersion(); }

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

ClientResult<std::vector<int64_t>> Client::NextSnowflake(uint32_t count) {
  return impl_->Wait<std::vector<int64_t>>(
      [&](auto done) { impl_->async.NextSnowflake(count, std::move(done)); });
}

ClientResult<DecodedSnowflake> Client::DecodeSnowflake(int64_t id) {
  return impl_->Wait<DecodedSnowflake>(
      [&](auto done) { impl_->async.DecodeSnowflake(id, std::move(done)); });
}

}  // namespace seqd::client

namespace seqd::client {

ClientResult<SendResult> Client::Send(OutgoingMessage message) {
  return impl_->Wait<SendResult>(
      [&](auto done) { impl_->async.Send(std::move(message), std::move(done)); });
}

ClientResult<PullPage> Client::PullRange(const std::string& conv_id, PullOptions options) {
  return impl_->Wait<PullPage>(
      [&](auto done) { impl_->async.PullRange(conv_id, std::move(options), std::move(done)); });
}

ClientResult<std::vector<Message>> Client::PullSeqs(const std::string& conv_id,
                                                    std::vector<int64_t> seqs,
                                                    const std::string& user_id) {
  return impl_->Wait<std::vector<Message>>([&](auto done) {
    impl_->async.PullSeqs(conv_id, std::move(seqs), user_id, std::move(done));
  });
}

ClientResult<IdRange> Client::NextBlock(const std::string& key, uint32_t count) {
  return impl_->Wait<IdRange>(
      [&](auto done) { impl_->async.NextBlock(key, count, std::move(done)); });
}

ClientResult<IdRange> Client::NextBlockOnce(const std::string& key, uint32_t count,
                                            const std::string& token) {
  return impl_->Wait<IdRange>(
      [&](auto done) { impl_->async.NextBlockOnce(key, count, token, std::move(done)); });
}

ClientResult<std::vector<int64_t>> Client::MaxIds(std::vector<std::string> keys) {
  return impl_->Wait<std::vector<int64_t>>(
      [&](auto done) { impl_->async.MaxIds(std::move(keys), std::move(done)); });
}

ClientResult<std::vector<int64_t>> Client::GetMinSeqs(std::vector<std::string> keys) {
  return impl_->Wait<std::vector<int64_t>>(
      [&](auto done) { impl_->async.GetMinSeqs(std::move(keys), std::move(done)); });
}

ClientResult<bool> Client::SetMinSeqs(std::vector<std::pair<std::string, int64_t>> values) {
  return impl_->Wait<bool>(
      [&](auto done) { impl_->async.SetMinSeqs(std::move(values), std::move(done)); });
}

ClientResult<std::vector<int64_t>> Client::UserSeqs(std::string user, uint8_t field,
                                                    std::vector<std::string> convs) {
  return impl_->Wait<std::vector<int64_t>>([&](auto done) {
    impl_->async.UserSeqs(std::move(user), field, std::move(convs), std::move(done));
  });
}

ClientResult<bool> Client::SetUserSeqs(std::string user, uint8_t field, bool raise_only,
                                       std::vector<std::pair<std::string, int64_t>> values) {
  return impl_->Wait<bool>([&](auto done) {
    impl_->async.SetUserSeqs(std::move(user), field, raise_only, std::move(values),
                             std::move(done));
  });
}

ClientResult<std::vector<int64_t>> Client::MaxSeqs(std::vector<std::string> conv_ids) {
  return impl_->Wait<std::vector<int64_t>>(
      [&](auto done) { impl_->async.MaxSeqs(std::move(conv_ids), std::move(done)); });
}

ClientResult<std::vector<ConvState>> Client::SyncUser(const std::string& user_id,
                                                      std::vector<std::string> conv_ids) {
  return impl_->Wait<std::vector<ConvState>>(
      [&](auto done) { impl_->async.SyncUser(user_id, std::move(conv_ids), std::move(done)); });
}

ClientResult<MemberInfo> Client::MarkRead(const std::string& conv_id, const std::string& user_id,
                                          int64_t read_seq) {
  return impl_->Wait<MemberInfo>(
      [&](auto done) { impl_->async.MarkRead(conv_id, user_id, read_seq, std::move(done)); });
}

ClientResult<MemberInfo> Client::SetMember(const std::string& conv_id, const std::string& user_id,
                                           std::optional<int64_t> min_seq,
                                           std::optional<int64_t> max_seq, bool clear_max) {
  return impl_->Wait<MemberInfo>([&](auto done) {
    impl_->async.SetMember(conv_id, user_id, min_seq, max_seq, clear_max, std::move(done));
  });
}

ClientResult<MemberInfo> Client::GetMember(const std::string& conv_id, const std::string& user_id) {
  return impl_->Wait<MemberInfo>(
      [&](auto done) { impl_->async.GetMember(conv_id, user_id, std::move(done)); });
}

ClientResult<Message> Client::SetStatus(const std::string& conv_id, int64_t seq,
                                        MessageStatus status) {
  return impl_->Wait<Message>(
      [&](auto done) { impl_->async.SetStatus(conv_id, seq, status, std::move(done)); });
}

ClientResult<int64_t> Client::SetConvMinSeq(const std::string& conv_id, int64_t min_seq) {
  return impl_->Wait<int64_t>(
      [&](auto done) { impl_->async.SetConvMinSeq(conv_id, min_seq, std::move(done)); });
}

std::unique_ptr<Subscription> Client::NewSubscription(AsyncClient::MessageFn on_message,
                                                      AsyncClient::LostFn on_lost) {
  return impl_->async.NewSubscription(std::move(on_message), std::move(on_lost));
}

ClientResult<bool> Client::Subscribe(std::vector<std::string> conv_ids,
                                     AsyncClient::MessageFn on_message,
                                     AsyncClient::LostFn on_lost) {
  return impl_->Wait<bool>([&](auto done) {
    impl_->async.Subscribe(std::move(conv_ids), std::move(on_message), std::move(on_lost),
                           std::move(done));
  });
}

ClientResult<bool> Client::Unsubscribe(std::vector<std::string> conv_ids) {
  return impl_->Wait<bool>(
      [&](auto done) { impl_->async.Unsubscribe(std::move(conv_ids), std::move(done)); });
}

}  // namespace seqd::client
