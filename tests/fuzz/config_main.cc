// libFuzzer entry point; the body is seqd::fuzz::ConfigFile (tests/fuzz/fuzz_targets.h).
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  seqd::fuzz::ConfigFile(data, size);
  return 0;
}
