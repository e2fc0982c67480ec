#include "server/http/http_deadline.h"

#include <sys/socket.h>

#include "server/base/log.h"
#include "server/http/api_router.h"
#include "server/service/request_metrics.h"
#include "server/service/services.h"

namespace seqd {

void HttpWriteTimedOut(HttpServer::Impl& server, std::string_view peer, int fd) {
  server.router.services().metrics.WriteTimedOut(Interface::kHttp);
  SEQD_LOG(kDebug).With("peer", peer).With("write_timeout_s", server.options.write_timeout.count())
      << "http: closing a connection that did not take its answer in time";
  // Best effort: if it fails the close is an orderly one.
  const linger reset{1, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
}

}  // namespace seqd
