// Services with nothing behind them: no allocator, no store, no router.
// Every call answers at once with a value made up from its arguments and is
// recorded, so a test can run a listener (HTTP, binary, RESP) alone and see
// what the listener asked the seam for.
//
// Thread safety: every stub locks its own record; calls may come from any
// network thread, as from the real services.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/service/services.h"

namespace seqd::stub {

// IDs: key K's IDs count up from 1 (each take continues where K's last one
// ended). A key starting with "bad" is refused kInvalidArgument, as the real
// boundary refuses a bad key.
class StubIds final : public IdApi {
 public:
  struct Asked {
    std::string key;
    int64_t count;
    bool contiguous;
  };

  void Take(const TakeRequest& r, TakeCallback done) override {
    IdBatch batch;
    {
      std::lock_guard lock(mu_);
      asked_.push_back({std::string(r.key), r.count, r.contiguous});
      if (r.key.starts_with("bad")) {
        return done(MakeError(ErrorCode::kInvalidArgument, "stub: a bad key"));
      }
      int64_t& next = next_[std::string(r.key)];
      batch.ranges.push_back({next + 1, next + r.count});
      next += r.count;
    }
    done(std::move(batch));
  }
  int64_t max_count() const override { return 1000; }
  int64_t common_max_count() const override { return 1000; }
  void MaxIds(std::vector<std::string> keys, Hop, ValuesCallback done) override {
    std::vector<int64_t> out;
    {
      std::lock_guard lock(mu_);
      for (const std::string& k : keys) out.push_back(next_[k]);
    }
    done(std::move(out));
  }
  void MaxIdsWithTimes(std::vector<std::string>, Hop, MaxIdsTimesCallback done) override {
    done(MakeError(ErrorCode::kStoreUnavailable, "stub: no times"));
  }
  void GetUserSeqs(std::string, UserSeqField, std::vector<std::string> convs,
                   ValuesCallback done) override {
    done(std::vector<int64_t>(convs.size(), 0));
  }
  void SetUserSeqs(std::string, UserSeqField, bool, std::vector<UserSeqValue>,
                   std::function<void(Status)> done) override {
    done(OkStatus());
  }
  void GetMinSeqs(std::vector<std::string> keys, ValuesCallback done) override {
    done(std::vector<int64_t>(keys.size(), 1));
  }
  void SetMinSeqs(std::vector<MinSeqValue>, Hop, std::function<void(Status)> done) override {
    done(OkStatus());
  }
  bool IsDense(std::string_view) const override { return false; }
  std::optional<DenseStats> dense_stats() const override { return std::nullopt; }
  std::vector<KeySnapshot> Snapshot() const override { return {}; }
  std::vector<KeySnapshot> Snapshot(std::string_view, size_t) const override { return {}; }
  std::optional<KeySnapshot> SnapshotKey(std::string_view) const override { return std::nullopt; }

  std::vector<Asked> asked() const {
    std::lock_guard lock(mu_);
    return asked_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> next_;
  std::vector<Asked> asked_;
};

// Messages: a send is stamped with its conversation's next seq; reads find
// nothing; member calls answer a member at seq 0.
class StubMessages final : public MessageApi {
 public:
  void Send(SendRequest r, Hop, Callback<AppendOutcome> done) override {
    AppendOutcome out;
    {
      std::lock_guard lock(mu_);
      sent_.push_back(r);
      out.seq = ++seqs_[r.conv_id];
      out.server_msg_id = 1000 + out.seq;
    }
    done(out);
  }
  Result<std::unique_ptr<Subscription>> Subscribe(const std::string&, Hop,
                                                  MessageListener) override {
    return MakeError(ErrorCode::kStoreUnavailable, "stub: no push");
  }
  void Pull(PullRequest, Callback<MessagePage> done) override { done(MessagePage{}); }
  void PullSeqs(std::string, std::vector<int64_t>, std::optional<std::string>,
                Callback<std::vector<StoredMessage>> done) override {
    done(std::vector<StoredMessage>{});
  }
  void MaxSeqs(std::vector<std::string> convs, Callback<std::vector<int64_t>> done) override {
    std::vector<int64_t> out;
    {
      std::lock_guard lock(mu_);
      for (const std::string& c : convs) out.push_back(seqs_[c]);
    }
    done(std::move(out));
  }
  void SyncUser(std::string, std::vector<std::string>,
                Callback<std::vector<ConvSync>> done) override {
    done(std::vector<ConvSync>{});
  }
  void SetMember(std::string conv, std::string user, std::optional<int64_t>, std::optional<int64_t>,
                 bool, Callback<MemberView> done) override {
    done(MemberView{conv, user, MemberState{}});
  }
  void GetMember(std::string conv, std::string user, Callback<MemberView> done) override {
    done(MemberView{conv, user, MemberState{}});
  }
  void MarkRead(std::string conv, std::string user, int64_t, Callback<MemberView> done) override {
    done(MemberView{conv, user, MemberState{}});
  }
  void SetStatus(std::string, int64_t, MessageStatus, Callback<StoredMessage> done) override {
    done(MakeError(ErrorCode::kNotFound, "stub: no messages"));
  }
  void SetConvMinSeq(std::string, int64_t min_seq, Callback<int64_t> done) override {
    done(min_seq);
  }
  size_t max_pull_bytes() const override { return 1 << 20; }

  std::vector<SendRequest> sent() const {
    std::lock_guard lock(mu_);
    return sent_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> seqs_;
  std::vector<SendRequest> sent_;
};

class StubKeys final : public KeyAdminApi {
 public:
  void ListKeys(std::string, size_t, Callback<std::vector<KeyRow>> done) override {
    done(std::vector<KeyRow>{});
  }
  void GetKey(std::string, Callback<KeyRow> done) override {
    done(MakeError(ErrorCode::kUnknownKey, "stub: no keys"));
  }
  void CreateKey(std::string key, int64_t step, std::string description,
                 Callback<KeyRow> done) override {
    KeyRow row;
    row.key = key;
    row.step = step;
    row.description = description;
    done(row);
  }
  void SetStep(std::string, int64_t, Callback<KeyRow> done) override {
    done(MakeError(ErrorCode::kUnknownKey, "stub: no keys"));
  }
  void CheckStore(std::function<void(Status)> done) override { done(OkStatus()); }
};

// Snowflake: off, as with snowflake = off.
class StubSnowflake final : public SnowflakeApi {
 public:
  const SnowflakeLayout& layout() const override { return layout_; }
  int64_t max_count() const override { return 1; }
  bool enabled() const override { return false; }
  void Next(int64_t, Callback done) override {
    done(MakeError(ErrorCode::kNotServing, "stub: snowflake off"));
  }
  Result<SnowflakeFields> Decode(int64_t id) const override { return layout_.Decode(id); }
  SnowflakeStatus status() const override { return {}; }

 private:
  SnowflakeLayout layout_;
};

class StubStreams final : public StreamCounters {
 public:
  void StreamOpened() override {}
  void StreamClosed() override {}
  void LongPollStarted() override {}
  void LongPollEnded() override {}
  void EventsSent(int64_t) override {}
  void SlowReaderClosed() override {}
  void Refused(bool) override {}
};

// Counts requests by "interface op status"; /metrics renders the counts.
class StubMetrics final : public RequestMetrics {
 public:
  using RequestMetrics::CountRequest;
  void CountRequest(Interface i, std::string_view op, std::string_view status, double,
                    int64_t n) override {
    std::lock_guard lock(mu_);
    counts_[std::to_string(static_cast<int>(i)) + " " + std::string(op) + " " +
            std::string(status)] += n;
  }
  void WriteTimedOut(Interface) override {}
  void SetStoreUp(bool) override {}
  std::string Render() override {
    std::lock_guard lock(mu_);
    std::string out;
    for (const auto& [label, n] : counts_) out += label + " " + std::to_string(n) + "\n";
    return out;
  }
  StreamCounters& streams() override { return streams_; }
  int64_t Count(Interface i, std::string_view op, std::string_view status) {
    std::lock_guard lock(mu_);
    return counts_[std::to_string(static_cast<int>(i)) + " " + std::string(op) + " " +
                   std::string(status)];
  }

 private:
  std::mutex mu_;
  std::map<std::string, int64_t> counts_;
  StubStreams streams_;
};

struct StubServices {
  StubIds ids;
  StubMessages messages;
  StubKeys keys;
  StubSnowflake snowflake;
  StubMetrics metrics;
  Services services{ids, messages, keys, snowflake, metrics};
};

}  // namespace seqd::stub
