// Load shedding's thread mark: while a thread runs work its runner could not
// queue (the database queue is full: server/base/task_runner.h), the store
// calls made on that thread fail at once with kStoreUnavailable, without
// touching the database (storage/store_shedding.h wraps a store so). The
// caller (the allocator, key admin) handles it as any store failure: the
// request gets 503 STORE_UNAVAILABLE now instead of waiting behind the
// queue. At the bottom of the layers: the runners set the mark, the stores
// read it.
//
// Thread safety: ShedScope and ShedThisThread() concern the calling thread
// only.
#pragma once

#include "common/error.h"

namespace seqd {

// True while a ShedScope is alive on this thread.
bool ShedThisThread();

// Marks the calling thread as shedding for its lifetime. Nests.
class ShedScope {
 public:
  ShedScope();
  ~ShedScope();
  ShedScope(const ShedScope&) = delete;
  ShedScope& operator=(const ShedScope&) = delete;
};

// The error a shed call returns.
Error ShedError();

}  // namespace seqd
