// Clang's thread-safety attributes (-Wthread-safety), as macros that are
// empty for other compilers. Guarded state says which mutex guards it, and a
// function says what it needs held, so the compiler checks the locking rule
// instead of a naming convention:
//
//   class Counter {
//    public:
//     void Add(int n) EXCLUDES(mu_) { MutexLock lock(mu_); AddLocked(n); }
//    private:
//     void AddLocked(int n) REQUIRES(mu_) { total_ += n; }
//     Mutex mu_;
//     int total_ GUARDED_BY(mu_) = 0;
//   };
//
// The mutex types (common/mutex.h, server/base/tiny_mutex.h) are capabilities.
// The test command's clang build (scripts/check-build) turns every warning of
// the analysis into an error.
#pragma once

#if defined(__clang__)
#define SEQD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SEQD_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are mutexes (or other capabilities).
#define CAPABILITY(name) SEQD_THREAD_ANNOTATION(capability(name))
// On a class: an RAII lock; its constructor acquires, its destructor releases.
#define SCOPED_CAPABILITY SEQD_THREAD_ANNOTATION(scoped_lockable)
// On a field: read or written only with `mu` held.
#define GUARDED_BY(mu) SEQD_THREAD_ANNOTATION(guarded_by(mu))
// On a pointer field: what it points to is read or written only with `mu` held.
#define PT_GUARDED_BY(mu) SEQD_THREAD_ANNOTATION(pt_guarded_by(mu))
// On a mutex field: taken after (before) the listed mutexes.
#define ACQUIRED_AFTER(...) SEQD_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define ACQUIRED_BEFORE(...) SEQD_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
// On a function: the caller holds the mutexes (exclusively; shared).
#define REQUIRES(...) SEQD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) SEQD_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On a function: it takes (gives back) the mutexes and returns holding them
// (not holding them).
#define ACQUIRE(...) SEQD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) SEQD_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) SEQD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) SEQD_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) SEQD_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
// On a function: it takes the mutex only when it returns `result`.
#define TRY_ACQUIRE(...) SEQD_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) SEQD_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
// On a function: the caller must not hold the mutexes (it takes them itself).
#define EXCLUDES(...) SEQD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// On a function: asserts at run time that the mutex is held; the analysis
// trusts it from there on.
#define ASSERT_CAPABILITY(x) SEQD_THREAD_ANNOTATION(assert_capability(x))
// On a function: it returns (a reference to) the named mutex.
#define RETURN_CAPABILITY(x) SEQD_THREAD_ANNOTATION(lock_returned(x))
// On a function: the analysis skips it. Each use says why in a comment.
#define NO_THREAD_SAFETY_ANALYSIS SEQD_THREAD_ANNOTATION(no_thread_safety_analysis)
