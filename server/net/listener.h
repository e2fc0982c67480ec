// What every listener (HTTP, binary, RESP) offers the app alike: bind, the
// bound port, the connections open now, and stop. Each listener's header
// (server/http/http_server.h, server/binary/binary_server.h,
// server/resp/resp_server.h) says what it serves and what Stop() lets
// finish.
//
// Thread safety: every method is safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/error.h"

// Every listener is constructed on an io_context (its accept loop runs
// there): declared here for the listeners' headers.
namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace seqd {

class Listener {
 public:
  Listener() = default;
  virtual ~Listener() = default;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds and starts accepting. kInvalidArgument (bad address, address in
  // use, ...) on failure; never throws. Call once.
  virtual Status Listen() = 0;

  // The bound port (useful with port 0); 0 before a successful Listen().
  virtual uint16_t port() const = 0;

  // Stops accepting and closes each connection once it has nothing left to
  // answer. `drained` (optional) runs once, on an io_context thread, when no
  // connection is left.
  virtual void Stop(std::function<void()> drained) = 0;

  virtual size_t open_connections() const = 0;
};

}  // namespace seqd
