// The checks every MessageStore backend must pass (message_backends.h), and
// SEQD_MESSAGE_CONFORMANCE_CASES, which makes a doctest case of each for
// one backend. Definitions in message_checks.cc.
//
// Test-only; include after <doctest/doctest.h>.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "storage/message_store.h"
#include "tests/conformance/message_backends.h"

namespace seqd::message_conformance {

// Every message of `conv`, ascending, read in pages.
std::vector<StoredMessage> ReadAll(MessageStore& s, const std::string& conv);

void CheckContiguousSeqs(Backend& b);
void CheckDuplicates(Backend& b);
void CheckMessageIdConflicts(Backend& b);
void CheckAppendRunAgain(Backend& b);
void CheckStaleCache(Backend& b);
void CheckFailedAppend(Backend& b);
void CheckConcurrentInstances(Backend& b, int threads_per_instance, int batches, int batch_size);
void CheckRangeQueries(Backend& b);
void CheckStatusAndPayloads(Backend& b);
void CheckConvAndMembers(Backend& b);
void CheckCountUnread(Backend& b);

}  // namespace seqd::message_conformance

#define SEQD_MESSAGE_CONFORMANCE_CASES(BACKEND, NAME)                                 \
  TEST_CASE(NAME ": seqs 1..N contiguous across batches and conversations") {         \
    BACKEND b;                                                                        \
    CheckContiguousSeqs(b);                                                           \
  }                                                                                   \
  TEST_CASE(NAME ": duplicates return the original outcome and take no seq") {        \
    BACKEND b;                                                                        \
    CheckDuplicates(b);                                                               \
  }                                                                                   \
  TEST_CASE(NAME ": a used client message id with other content is a conflict") {     \
    BACKEND b;                                                                        \
    CheckMessageIdConflicts(b);                                                       \
  }                                                                                   \
  TEST_CASE(NAME ": Append run again with the same requests answers the first run") { \
    BACKEND b;                                                                        \
    CheckAppendRunAgain(b);                                                           \
  }                                                                                   \
  TEST_CASE(NAME ": a stale max_seq_cache costs a retry, never a wrong seq") {        \
    BACKEND b;                                                                        \
    CheckStaleCache(b);                                                               \
  }                                                                                   \
  TEST_CASE(NAME ": a failed Append stores nothing and erases the cache entries") {   \
    BACKEND b;                                                                        \
    CheckFailedAppend(b);                                                             \
  }                                                                                   \
  TEST_CASE(NAME ": two instances x 3 threads on one conversation: seqs 1..N once") { \
    BACKEND b;                                                                        \
    CheckConcurrentInstances(b, 3, 30, 8);                                            \
  }                                                                                   \
  TEST_CASE(NAME ": GetRange, GetBySeqs, MaxSeq, MaxSeqs") {                          \
    BACKEND b;                                                                        \
    CheckRangeQueries(b);                                                             \
  }                                                                                   \
  TEST_CASE(NAME ": SetStatus and binary payloads") {                                 \
    BACKEND b;                                                                        \
    CheckStatusAndPayloads(b);                                                        \
  }                                                                                   \
  TEST_CASE(NAME ": conversation min seq, members, SetReadSeq rules") {               \
    BACKEND b;                                                                        \
    CheckConvAndMembers(b);                                                           \
  }                                                                                   \
  TEST_CASE(NAME ": CountUnread") {                                                   \
    BACKEND b;                                                                        \
    CheckCountUnread(b);                                                              \
  }
