// libFuzzer entry point; the body is seqd::fuzz::HttpJson (tests/fuzz/fuzz_targets.h).
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  seqd::fuzz::HttpJson(data, size);
  return 0;
}
