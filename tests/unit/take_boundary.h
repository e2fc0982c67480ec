// The boundary where a take is checked (IdApi, implemented by KeyRouter)
// over a test's own allocators: a test that sends a bad count, key or token
// sends it here, as every listener does, never to an allocator directly.
//
// Ownership: the allocators must outlive the boundary. Thread safety: as
// KeyRouter.
#pragma once

#include "server/core/dense_allocator.h"
#include "server/core/segment_allocator.h"
#include "server/msg/message_service.h"
#include "server/route/key_router.h"
#include "storage/memory/memory_message_store.h"
#include "storage/memory/memory_store.h"

namespace seqd {

struct TakeBoundary {
  TakeBoundary(SegmentAllocator& segments, DenseAllocator* dense = nullptr)
      : messages(message_store, id_store, MessageServiceOptions()),
        router(segments, messages, dense) {}

  MemoryMessageStore message_store;
  MemoryStore id_store;
  MessageService messages;
  KeyRouter router;
};

}  // namespace seqd
