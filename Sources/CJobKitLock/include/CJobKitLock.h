#ifndef CJOBKITLOCK_H
#define CJOBKITLOCK_H

#include <stdint.h>

#if defined(__linux__)
/// A 4-byte mutex on Linux: a word that is 0 (free), 1 (held) or 2 (held, with waiters), taken by an
/// atomic compare-and-swap and waited on with a private futex (Ulrich Drepper's "Futexes Are Tricky",
/// mutex 2). The word must be zero-initialized and must not move while in use.
///
/// The functions live in a C file (not inline in this header) so that the thread sanitizer instruments
/// their atomics: taking the lock is an acquire and releasing it a release, which is how the
/// sanitizer learns the order they impose.
void jobkit_lock(uint32_t *word);
void jobkit_unlock(uint32_t *word);
#endif

#endif
