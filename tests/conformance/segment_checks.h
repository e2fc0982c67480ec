// The checks every SegmentStore backend must pass (segment_backends.h),
// and SEQD_CONFORMANCE_CASES, which makes a doctest case of each for one
// backend. Definitions in segment_checks.cc.
//
// Test-only; include after <doctest/doctest.h>.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>

#include "common/error.h"
#include "storage/segment_store.h"
#include "tests/conformance/segment_backends.h"

namespace seqd::conformance {

// `r` is the segment [first, last] of a row whose step is `step`.
void CheckSegment(const Result<ReservedSegment>& r, int64_t first, int64_t last, int64_t step);

void CheckCrud(Backend& b);
void CheckListPaging(Backend& b);
void CheckReserveSequence(Backend& b);
void CheckReserveMany(Backend& b);
void CheckConcurrentBatches(Backend& b);
void CheckCreateAndReserve(Backend& b);
void CheckConcurrentCreates(Backend& b);
void CheckConcurrentDisjoint(Backend& b);
void CheckPersistence(Backend& b);
void CheckMinSeqs(Backend& b);
void CheckBlockTokens(Backend& b);
void CheckAllocTimes(Backend& b);
void CheckUserSeqs(Backend& b);
void CheckLeafCreatedTable(Backend& b);

}  // namespace seqd::conformance

#define SEQD_CONFORMANCE_CASES(BACKEND, NAME)                                           \
  TEST_CASE(NAME ": create, get, set step, duplicate and unknown keys") {               \
    BACKEND b;                                                                          \
    CheckCrud(b);                                                                       \
  }                                                                                     \
  TEST_CASE(NAME ": list keys in order, paged with after + limit") {                    \
    BACKEND b;                                                                          \
    CheckListPaging(b);                                                                 \
  }                                                                                     \
  TEST_CASE(NAME ": reserve yields Leaf's segments") {                                  \
    BACKEND b;                                                                          \
    CheckReserveSequence(b);                                                            \
  }                                                                                     \
  TEST_CASE(NAME ": ReserveMany and CreateKeys, as the single calls would") {           \
    BACKEND b;                                                                          \
    CheckReserveMany(b);                                                                \
  }                                                                                     \
  TEST_CASE(NAME ": ReserveMany creates rows and reserves in one call") {               \
    BACKEND b;                                                                          \
    CheckCreateAndReserve(b);                                                           \
  }                                                                                     \
  TEST_CASE(NAME ": threads creating the same new keys get disjoint ranges") {          \
    BACKEND b;                                                                          \
    CheckConcurrentCreates(b);                                                          \
  }                                                                                     \
  TEST_CASE(NAME ": threads reserving overlapping batches get disjoint ranges") {       \
    BACKEND b;                                                                          \
    CheckConcurrentBatches(b);                                                          \
  }                                                                                     \
  TEST_CASE(NAME ": 8 threads x 50 reserves, own instances: disjoint and contiguous") { \
    BACKEND b;                                                                          \
    CheckConcurrentDisjoint(b);                                                         \
  }                                                                                     \
  TEST_CASE(NAME ": values persist across reopening") {                                 \
    BACKEND b;                                                                          \
    CheckPersistence(b);                                                                \
  }                                                                                     \
  TEST_CASE(NAME ": min seqs: 0 until set, set in one call, shared, durable") {         \
    BACKEND b;                                                                          \
    CheckMinSeqs(b);                                                                    \
  }                                                                                     \
  TEST_CASE(NAME ": block tokens: replayed, per key, with exact steps, pruned") {       \
    BACKEND b;                                                                          \
    CheckBlockTokens(b);                                                                \
  }                                                                                     \
  TEST_CASE(NAME ": allocation times: stamped in the reservation, never back, durable") { \
    BACKEND b;                                                                          \
    CheckAllocTimes(b);                                                                 \
  }                                                                                     \
  TEST_CASE(NAME ": user seqs: 0 until set, set or raised per field, shared, durable") { \
    BACKEND b;                                                                          \
    CheckUserSeqs(b);                                                                   \
  }                                                                                     \
  TEST_CASE(NAME ": a table created by Leaf works as-is") {                             \
    BACKEND b;                                                                          \
    CheckLeafCreatedTable(b);                                                           \
  }
