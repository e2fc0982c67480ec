// What the binary dispatcher (binary_dispatcher.h) needs of a connection:
// where answers go, how an answer that comes later gets back, and the
// connection's subscriptions. BinaryServer's session implements it over a
// socket; tests implement it over a string.
//
// Thread safety: every method runs on the connection's strand (its one
// logical thread), except Deliver(), DeliverIds() and DeliverRun(), which
// any thread may call.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/error.h"
#include "server/auth/access.h"
#include "server/service/id_api.h"
#include "server/service/message_api.h"
#include "server/binary/next_ids_runs.h"

namespace seqd {

// The connection's subscriptions, by conversation.
using SubscriptionMap = std::map<std::string, std::unique_ptr<Subscription>, std::less<>>;

class BinaryConnection {
 public:
  virtual ~BinaryConnection() = default;

  // The buffer answers are appended to, one whole frame at a time; call
  // Queued() after each.
  virtual std::string& out() = 0;
  virtual void Queued() = 0;

  // Before a service call whose answer may come later: the connection
  // stays alive and counts the request as in flight until the answer is
  // delivered (exactly once) with Deliver or DeliverIds.
  virtual void Hold() = 0;
  // Any thread. Runs `write(connection)` on the strand (inline when already
  // there), releasing the hold; skipped if the connection closed meanwhile.
  // `write` appends the answer frame and calls Queued().
  virtual void Deliver(std::function<void(BinaryConnection&)> write) = 0;
  // Any thread. The NEXT_IDS answer, without allocating: the connection
  // hands it to BinaryDispatcher::WriteIds on the strand.
  virtual void DeliverIds(uint32_t request_id, Result<IdBatch> result) = 0;

  // True while the connection hands the dispatcher the frames of one read,
  // to end with BinaryDispatcher::EndOfBatch: NEXT_IDS requests of one key
  // may then be gathered into a run (runs()) and answered together. False
  // by default: every request is taken on its own.
  virtual bool batching() const { return false; }
  // Any thread. A run's IDs: the connection hands them to
  // BinaryDispatcher::WriteRun on the strand, releasing one hold for each
  // request of the run (each was held when gathered).
  virtual void DeliverRun(uint32_t run, Result<IdBatch> result) = 0;
  NextIdsRuns& runs() { return runs_; }

  // The answer just queued said SHUTTING_DOWN: close once it is written.
  virtual void CloseAfterAnswers() = 0;

  // Subscriptions owned by the connection (dropped when it closes), and a
  // listener that queues a pushed message on this connection (any thread;
  // never blocks).
  virtual SubscriptionMap& subscriptions() = 0;
  virtual MessageListener PushListener() = 0;

  // The connection's rights: as the server identified it when it accepted
  // it (no credentials: open without a tokens file, else nobody), replaced
  // by each AUTH. Open by default (tests).
  Access& access() { return access_; }
  // Failed AUTHs so far (the dispatcher closes the connection at 3).
  int failed_auths = 0;
  // Store groups: the connection sent PLACEMENT, so its answers are
  // preceded by a PLACEMENT push whenever the instance's placement version
  // rose above `placement_told`, the last version it was told (answered or
  // pushed).
  bool placement_pushes = false;
  int64_t placement_told = 0;

 private:
  Access access_ = IdentifyBy(nullptr, {}, "binary", {});
  NextIdsRuns runs_;
};

}  // namespace seqd
