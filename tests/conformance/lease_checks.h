// The checks every WorkerLeaseStore backend must pass (lease_backends.h),
// and SEQD_LEASE_CONFORMANCE_CASES, which makes a doctest case of each for
// one backend. Definitions in lease_checks.cc.
//
// Test-only; include after <doctest/doctest.h>.
#pragma once

#include <doctest/doctest.h>

#include "tests/conformance/lease_backends.h"

namespace seqd::lease_conformance {

void CheckClaimBasics(Backend& b);
void CheckRenew(Backend& b);
void CheckReleaseAndSameOwner(Backend& b);
void CheckUnexpiredNotTaken(Backend& b);
void CheckExpiryTakeover(Backend& b);
void CheckTakeoverOrder(Backend& b);
void CheckMaxWorkers(Backend& b);
void CheckBadArguments(Backend& b);
void CheckBytes(Backend& b);
void CheckConcurrentClaims(Backend& b, int rounds);
void CheckRealClock(Backend& b);

}  // namespace seqd::lease_conformance

#define SEQD_LEASE_CONFORMANCE_CASES(BACKEND, NAME)                                            \
  TEST_CASE(NAME ": ids 0 then 1; a repeated claim returns the same id, extended") {           \
    BACKEND b;                                                                                 \
    CheckClaimBasics(b);                                                                       \
  }                                                                                            \
  TEST_CASE(NAME ": renew extends and raises the bound; other instances get a precondition") { \
    BACKEND b;                                                                                 \
    CheckRenew(b);                                                                             \
  }                                                                                            \
  TEST_CASE(NAME ": release; the same owner gets its id and bound back") {                     \
    BACKEND b;                                                                                 \
    CheckReleaseAndSameOwner(b);                                                               \
  }                                                                                            \
  TEST_CASE(NAME ": an unexpired lease of another instance is never taken") {                  \
    BACKEND b;                                                                                 \
    CheckUnexpiredNotTaken(b);                                                                 \
  }                                                                                            \
  TEST_CASE(NAME ": expiry and takeover; the old holder's renew fails") {                      \
    BACKEND b;                                                                                 \
    CheckExpiryTakeover(b);                                                                    \
  }                                                                                            \
  TEST_CASE(NAME ": takeover prefers released, then longest expired rows") {                   \
    BACKEND b;                                                                                 \
    CheckTakeoverOrder(b);                                                                     \
  }                                                                                            \
  TEST_CASE(NAME ": max_workers bounds the ids; exhausted is kNotServing") {                   \
    BACKEND b;                                                                                 \
    CheckMaxWorkers(b);                                                                        \
  }                                                                                            \
  TEST_CASE(NAME ": bad arguments are kInvalidArgument and store nothing") {                   \
    BACKEND b;                                                                                 \
    CheckBadArguments(b);                                                                      \
  }                                                                                            \
  TEST_CASE(NAME ": owner and instance compare byte for byte") {                               \
    BACKEND b;                                                                                 \
    CheckBytes(b);                                                                             \
  }                                                                                            \
  TEST_CASE(NAME ": 9 instances race for 8 ids: 8 distinct winners, 4 rounds") {               \
    BACKEND b;                                                                                 \
    CheckConcurrentClaims(b, 4);                                                               \
  }
