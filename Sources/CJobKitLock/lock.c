#include "CJobKitLock.h"

#if defined(__linux__)
#include <errno.h>
#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

// Both keep errno as it was, like pthread_mutex_lock: a caller may take a lock between a failed call
// and reading its errno.
static void wait_while_two(uint32_t *word) {
    int saved = errno;
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    errno = saved;
}

static void wake_one(uint32_t *word) {
    int saved = errno;
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}

static void lock_contended(uint32_t *word) {
    // A short spin first: JobKit's critical sections are a few dozen instructions.
    for (int spin = 0; spin < 64; spin++) {
        uint32_t seen = __atomic_load_n(word, __ATOMIC_RELAXED);
        if (seen == 2) break;
        if (seen == 0) {
            uint32_t expected = 0;
            if (__atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    }
    // Mark the word contended, and sleep until it is released; whoever takes it from here keeps it
    // marked, so that its release wakes the next waiter.
    while (__atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE) != 0) {
        wait_while_two(word);
    }
}

void jobkit_lock(uint32_t *word) {
    uint32_t expected = 0;
    if (__atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
    lock_contended(word);
}

void jobkit_unlock(uint32_t *word) {
    if (__atomic_exchange_n(word, 0, __ATOMIC_RELEASE) == 2) wake_one(word);
}
#endif
