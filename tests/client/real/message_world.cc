#include "tests/client/real/message_world.h"

#include "server/msg/message_service.h"
#include "server/binary/binary_server.h"
#include "storage/memory/memory_message_store.h"
#include "tests/unit/net_test_support.h"
#include "tests/unit/test_services.h"

namespace seqd::clienttest {

namespace {

struct MessageFront {
  MessageFront(seqd::SegmentStore& store, seqd::TaskRunner& db, seqd::SegmentAllocator& allocator)
      : service(messages, ids, seqd::MessageServiceOptions()),
        services(store, db, allocator, {.messages = &service}) {}
  seqd::MemoryMessageStore messages;
  seqd::MemoryStore ids;
  seqd::MessageService service;
  seqd::TestServices services;
  const seqd::Services& target = services;
};

using World =
    seqd::nettest::ServerWorld<seqd::BinaryServer, seqd::BinaryServerOptions, MessageFront>;

}  // namespace

struct MessageWorld::Impl {
  World world;
};

MessageWorld::MessageWorld() : impl_(std::make_unique<Impl>()) { REQUIRE(impl_->world.listening); }
MessageWorld::~MessageWorld() = default;
uint16_t MessageWorld::port() const { return impl_->world.server.port(); }
void MessageWorld::LoseNextCommits(int n) { impl_->world.front.messages.LoseNextCommits(n); }

}  // namespace seqd::clienttest
