#include "tests/unit/source_dir.h"

namespace seqd::test {
const char* const kSourceDir = SEQD_SOURCE_DIR;
}  // namespace seqd::test
