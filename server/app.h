// The seqd application: everything one process runs, built from a Config.
//
// Owns, in build order (and destroyed in reverse): the stores (one MySQL
// connection pool for the segment and message stores, sized by db_threads;
// the worker-lease store has its own), the metrics, the io_context and its
// clock, the database runner, the services (allocator, key admin, message
// service, snowflake generator, worker-lease keeper), the Services seam, the
// routers and the listeners (HTTP, admin HTTP, binary, RESP), and the
// periodic tasks (schema, eviction, key refresh).
//
// Drain order on SIGTERM/SIGINT: stop the periodic tasks; every listener
// stops accepting and answers what is in flight; once all have drained, the
// allocator, the message service (its writers finish their batches) and the
// generator shut down, the keeper releases its worker id, and the io_context
// stops. Run() then joins the threads and returns 0.
//
// Thread safety: Create() and Run() are called once, from main's thread.
#pragma once

#include <memory>

#include "common/error.h"
#include "server/config/config.h"

namespace seqd {

class App {
 public:
  // Opens the stores and binds every listener. An error (bad store spec,
  // address in use, a snowflake layout that cannot hold now) is returned
  // with a message for the operator; nothing is left running.
  static Result<std::unique_ptr<App>> Create(const Config& config);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Serves until SIGTERM or SIGINT, drains (see above) and returns the
  // process exit code.
  int Run();

 private:
  struct Parts;
  explicit App(std::unique_ptr<Parts> parts);

  // The steps of Create (app.cc), in order. Each builds into `p` and fails
  // with what stops the start.
  struct Security;  // what the security step hands the later ones
  static Result<Security> SetUpSecurity(Parts& p);
  static Status OpenStorage(Parts& p);
  static Status JoinCluster(Parts& p, Security& security);
  static void BuildShardMover(Parts& p);
  static void WatchPlacement(Parts& p);
  static void BuildServices(Parts& p);
  static void WatchServices(Parts& p);
  static Status OpenListeners(Parts& p, const Security& security);
  static void StartLeases(Parts& p);
  std::unique_ptr<Parts> parts_;
};

}  // namespace seqd
