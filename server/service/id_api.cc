#include "server/service/id_api.h"

namespace seqd {

int64_t IdBatch::count() const {
  int64_t n = 0;
  for (const IdRange& r : ranges) n += r.size();
  return n;
}

}  // namespace seqd
