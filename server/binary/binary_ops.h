// The binary protocol's one op table: every opcode a client may send, with
// its name in docs/protocol.md, its metrics `op` label and the permission a
// token needs for it. The dispatcher takes op labels and permissions from
// here and nowhere else; a new op is a row here plus its handler.
//
// Thread safety: a constant table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "common/scopes.h"

namespace seqd {

struct BinaryOpRow {
  uint8_t opcode;
  std::string_view name;          // as docs/protocol.md names it: "NEXT_IDS"
  std::string_view metric_label;  // the `op` label, one of Metrics::Ops(Interface::kBinary)
  // What the connection's token must allow (for the request's key, if the
  // op has one); none: any authenticated connection (PING and AUTH: any).
  std::optional<Permission> permission;
};

// Every row, in opcode order.
std::span<const BinaryOpRow> BinaryOps();

// The row of `opcode`, or null for an opcode clients may not send.
const BinaryOpRow* BinaryOpFor(uint8_t opcode);

// The `op` label of `opcode`: its row's, or "protocol_error" without one.
std::string_view BinaryOpLabel(uint8_t opcode);

}  // namespace seqd
