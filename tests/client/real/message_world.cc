#include "tests/client/real/message_world.h"

#include "server/msg/message_service.h"
#include "server/tcp/binary_server.h"
#include "storage/memory_message_store.h"
#include "tests/unit/net_test_support.h"

namespace seqd::clienttest {

namespace {

struct MessageFront {
  MessageFront(seqd::SegmentStore&, seqd::TaskRunner&, seqd::SegmentAllocator& allocator)
      : allocator(allocator), service(messages, ids, seqd::MessageServiceOptions()) {}
  seqd::SegmentAllocator& allocator;
  seqd::MemoryMessageStore messages;
  seqd::MemoryStore ids;
  seqd::MessageService service;
  MessageFront& target = *this;
};

struct MessageServer : seqd::BinaryServer {
  MessageServer(boost::asio::io_context& io, seqd::BinaryServerOptions o, MessageFront& front)
      : seqd::BinaryServer(io, std::move(o), front.allocator, &front.service) {}
};

using World = seqd::nettest::ServerWorld<MessageServer, seqd::BinaryServerOptions, MessageFront>;

}  // namespace

struct MessageWorld::Impl {
  World world;
};

MessageWorld::MessageWorld() : impl_(std::make_unique<Impl>()) { REQUIRE(impl_->world.listening); }
MessageWorld::~MessageWorld() = default;
uint16_t MessageWorld::port() const { return impl_->world.server.port(); }
void MessageWorld::LoseNextCommits(int n) { impl_->world.front.messages.LoseNextCommits(n); }

}  // namespace seqd::clienttest
