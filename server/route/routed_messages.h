// MessageApi over this process's router and message service: sends and
// subscriptions go to the conversation's owner (KeyRouter), reads and member
// calls to the message service here (every instance reads committed rows).
//
// Ownership: holds references; the router and the service must outlive it.
// Thread safety: as KeyRouter and MessageService (any thread, never blocks).
#pragma once

#include "server/msg/message_service.h"
#include "server/route/key_router.h"
#include "server/service/message_api.h"

namespace seqd {

class RoutedMessages final : public MessageApi {
 public:
  RoutedMessages(KeyRouter& router, MessageService& service) : router_(router), service_(service) {}

  void Send(SendRequest request, Hop hop, Callback<AppendOutcome> done) override {
    router_.Send(std::move(request), hop, std::move(done));
  }
  Result<std::unique_ptr<Subscription>> Subscribe(const std::string& conv, Hop hop,
                                                  MessageListener listener) override {
    return router_.Subscribe(conv, hop, std::move(listener));
  }

  void Pull(PullRequest request, Callback<MessagePage> done) override {
    service_.Pull(std::move(request), std::move(done));
  }
  void PullSeqs(std::string conv_id, std::vector<int64_t> seqs, std::optional<std::string> user_id,
                Callback<std::vector<StoredMessage>> done) override {
    service_.PullSeqs(std::move(conv_id), std::move(seqs), std::move(user_id), std::move(done));
  }
  void MaxSeqs(std::vector<std::string> conv_ids, Callback<std::vector<int64_t>> done) override {
    service_.MaxSeqs(std::move(conv_ids), std::move(done));
  }
  void SyncUser(std::string user_id, std::vector<std::string> conv_ids,
                Callback<std::vector<ConvSync>> done) override {
    service_.SyncUser(std::move(user_id), std::move(conv_ids), std::move(done));
  }

  void SetMember(std::string conv_id, std::string user_id, std::optional<int64_t> min_seq,
                 std::optional<int64_t> max_seq, bool clear_max,
                 Callback<MemberView> done) override {
    service_.SetMember(std::move(conv_id), std::move(user_id), min_seq, max_seq, clear_max,
                       std::move(done));
  }
  void GetMember(std::string conv_id, std::string user_id, Callback<MemberView> done) override {
    service_.GetMember(std::move(conv_id), std::move(user_id), std::move(done));
  }
  void MarkRead(std::string conv_id, std::string user_id, int64_t read_seq,
                Callback<MemberView> done) override {
    service_.MarkRead(std::move(conv_id), std::move(user_id), read_seq, std::move(done));
  }
  void SetStatus(std::string conv_id, int64_t seq, MessageStatus status,
                 Callback<StoredMessage> done) override {
    service_.SetStatus(std::move(conv_id), seq, status, std::move(done));
  }
  void SetConvMinSeq(std::string conv_id, int64_t min_seq, Callback<int64_t> done) override {
    service_.SetConvMinSeq(std::move(conv_id), min_seq, std::move(done));
  }
  size_t max_pull_bytes() const override { return service_.options().max_pull_bytes; }

 private:
  KeyRouter& router_;
  MessageService& service_;
};

}  // namespace seqd
