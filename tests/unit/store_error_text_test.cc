// A store error's text (which may name the MySQL user, host, port and
// schema) never reaches a client: over HTTP, the binary protocol and RESP,
// clients read "store unavailable, retry later" or "internal error"; the
// full text goes to the log only.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "proto/binary_codec.h"
#include "proto/message_codec.h"
#include "server/base/manual_clock.h"
#include "server/base/task_runner.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/msg/message_service.h"
#include "server/resp/resp_commands.h"
#include "server/service/wire_errors.h"
#include "server/binary/binary_dispatcher.h"
#include "storage/memory/memory_store.h"
#include "tests/unit/router_fixture.h"
#include "tests/unit/string_connection.h"
#include "tests/unit/test_services.h"
#include "tests/unit/test_stores.h"

namespace seqd {
namespace {

using namespace std::chrono_literals;
namespace http = boost::beast::http;

// What a MySQL connect error looks like: user, host, port, schema, and a
// password where a careless driver might put one.
constexpr char kStoreText[] =
    "mysql connect to seqd_app@db-7.internal:3306/seqd_prod: Access denied for user "
    "'seqd_app'@'10.1.2.3' password=hunter2";
const std::vector<std::string> kSecrets = {"seqd_app",  "db-7.internal", "3306",
                                           "seqd_prod", "hunter2",       "10.1.2.3"};

Error StoreError(ErrorCode code) { return MakeError(code, kStoreText); }

class SecretMessageStore final : public MessageStore {
 public:
  explicit SecretMessageStore(ErrorCode code) : code_(code) {}
  Status EnsureSchema() override { return Fail(); }
  Result<std::vector<AppendOutcome>> Append(std::span<const AppendRequest>, MaxSeqCache&) override {
    return Fail();
  }
  Result<std::vector<AppendOutcome>> AppendFenced(std::span<const AppendRequest>, MaxSeqCache&,
                                                  AppendFencing&) override {
    return Fail();
  }
  Result<int64_t> MaxSeq(std::string_view) override { return Fail(); }
  Result<std::vector<int64_t>> MaxSeqs(std::span<const std::string>) override { return Fail(); }
  Result<MessagePage> GetRange(const RangeQuery&) override { return Fail(); }
  Result<std::vector<StoredMessage>> GetBySeqs(std::string_view,
                                               std::span<const int64_t>) override {
    return Fail();
  }
  Result<StoredMessage> SetStatus(std::string_view, int64_t, MessageStatus) override {
    return Fail();
  }
  Result<int64_t> GetConvMinSeq(std::string_view) override { return Fail(); }
  Status SetConvMinSeq(std::string_view, int64_t) override { return Fail(); }
  Result<std::optional<MemberState>> GetMember(std::string_view, std::string_view) override {
    return Fail();
  }
  Status PutMember(std::string_view, std::string_view, const MemberState&) override {
    return Fail();
  }
  Result<MemberState> SetReadSeq(std::string_view, std::string_view, int64_t, int64_t) override {
    return Fail();
  }
  Result<int64_t> CountUnread(std::string_view, std::string_view, int64_t, int64_t) override {
    return Fail();
  }
  Status Ping() override { return Fail(); }

 private:
  Error Fail() const { return StoreError(code_); }
  ErrorCode code_;
};

// Services whose every store call fails with `code` and kStoreText.
struct World {
  explicit World(ErrorCode code)
      : segments(StoreError(code)),
        messages_store(code),
        allocator(segments, db, clock, KeyRules({{"auto_", 100}}), AllocatorOptions{}),
        admin(segments, db, allocator),
        messages(messages_store, segments, MessageServiceOptions()),
        services(segments, db, allocator, {.keys = &admin, .messages = &messages}),
        router(services, RouterOptions{"9.9.9", std::chrono::steady_clock::now()}),
        dispatcher(services, BinaryDispatchLimits{}),
        conn(dispatcher) {}

  // The whole HTTP answer (status line, headers, body) as text.
  std::string Http(http::verb method, std::string target, std::string body = "") {
    // Time passes until the store call gives up and the answer comes.
    const ApiRouter::Response out =
        AwaitAnswer(router, JsonRequest(method, std::move(target), std::move(body)), 100,
                    [&] { clock.Advance(500ms); });
    std::string text = std::to_string(out.result_int()) + " ";
    for (const auto& field : out) {
      text += std::string(field.name_string()) + ": " + std::string(field.value()) + "\n";
    }
    return text + out.body();
  }

  FailingSegmentStore segments;  // every call fails with StoreError(code)
  SecretMessageStore messages_store;
  ThreadPoolRunner db{1};
  ManualClock clock;
  SegmentAllocator allocator;
  KeyAdmin admin;
  MessageService messages;
  TestServices services;
  ApiRouter router;
  BinaryDispatcher dispatcher;
  StringConnection conn;
  // Last: the database thread is done before anything above goes.
  StopRunnerOnExit stop_db{db};
};

void CheckNoSecrets(const std::string& answer) {
  for (const std::string& s : kSecrets) {
    CHECK_MESSAGE(answer.find(s) == std::string::npos, "'" << s << "' leaked in: " << answer);
  }
}

}  // namespace

TEST_CASE("store error text: never in an HTTP, binary or RESP answer") {
  for (ErrorCode code : {ErrorCode::kStoreUnavailable, ErrorCode::kInternal}) {
    INFO(ErrorCodeName(code));
    World w(code);

    // HTTP: IDs, key admin, message pulls, sends and bounds.
    int unavailable = 0;
    for (auto [method, target, body] :
         std::vector<std::tuple<http::verb, std::string, std::string>>{
             {http::verb::get, "/seq/auto_k", ""},
             {http::verb::get, "/admin/keys/k", ""},
             {http::verb::get, "/conversations/sg_c/messages?from=1", ""},
             {http::verb::get, "/conversations/sg_c/messages?seqs=1,2", ""},
             {http::verb::post, "/conversations/sg_c/messages",
              R"({"sender_id":"a","client_msg_id":"m1","content_type":1,"payload":"x"})"},
             {http::verb::put, "/conversations/sg_c/min_seq", R"({"min_seq":1})"},
             {http::verb::put, "/conversations/sg_c/members/bob", R"({"min_seq":1})"},
             {http::verb::get, "/readyz", ""},
         }) {
      const std::string& path = target;  // clang 14 cannot capture a binding (INFO does)
      INFO(path);
      const std::string answer = w.Http(method, target, body);
      CHECK(answer.rfind("200 ", 0) != 0);
      CheckNoSecrets(answer);
      // A 503 tells the client when to come back.
      if (answer.rfind("503 ", 0) == 0) {
        ++unavailable;
        CHECK(answer.find("Retry-After: 1\n") != std::string::npos);
      }
    }
    if (code == ErrorCode::kStoreUnavailable) CHECK(unavailable > 0);

    // Binary: NEXT_IDS, PULL_RANGE, SET_CONV_MIN_SEQ, SEND.
    std::vector<std::string> frames(4);
    proto::AppendNextIdsRequest(frames[0], 1, "auto_k", 1);
    proto::AppendRequest(frames[1], 2, proto::PullRangeReq{"sg_c", 1, 0, 10, false, ""});
    proto::AppendRequest(frames[2], 3, proto::SetConvMinSeqReq{"sg_c", 1});
    proto::AppendRequest(frames[3], 4, proto::SendReq{"sg_c", "a", "m2", 1, "x"});
    for (const std::string& frame : frames) {
      const std::string answer = w.conn.Call(frame, w.clock);
      CHECK(AnswerView(answer).status != proto::Status::kOk);
      CheckNoSecrets(answer);
    }

    // RESP: the reply an INCR gets for the error, and the table's own texts.
    CheckNoSecrets(TakeErrorReply(StoreError(code)));
    CheckNoSecrets(RespErrorText(StoreError(code)));
    CheckNoSecrets(ToBinaryError(StoreError(code)).message);
    CheckNoSecrets(PublicMessage(StoreError(code)));
  }
}

TEST_CASE("store error text: clients read a fixed text with a retry hint") {
  CHECK(PublicMessage(StoreError(ErrorCode::kStoreUnavailable)) ==
        "store unavailable, retry later");
  CHECK(ToBinaryError(StoreError(ErrorCode::kStoreUnavailable)).status ==
        proto::Status::kStoreUnavailable);
  CHECK(PublicMessage(StoreError(ErrorCode::kInternal)) == "internal error");
}

}  // namespace seqd
