#include "common/shed_scope.h"

namespace seqd {
namespace {

thread_local int shed_depth = 0;

}  // namespace

bool ShedThisThread() { return shed_depth > 0; }

ShedScope::ShedScope() { ++shed_depth; }
ShedScope::~ShedScope() { --shed_depth; }

Error ShedError() {
  return MakeError(ErrorCode::kStoreUnavailable,
                   "database queue full: the call was refused without reaching the store");
}

}  // namespace seqd
