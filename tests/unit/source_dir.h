#pragma once
// The checkout's root directory, for tests that read files of the source tree
// (docs, configs, the fuzz corpus, the certificate script).
//
// It is defined in source_dir.cc, the only unit-test translation unit built
// with the checkout's path, so that every other object of the unit tests is
// the same in any clone and a compiler cache shares it between clones.
namespace seqd::test {
extern const char* const kSourceDir;
}  // namespace seqd::test
