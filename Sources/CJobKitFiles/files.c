#include "CJobKitFiles.h"

#include <errno.h>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int jobkit_rename_noreplace(int fromDirectory, const char *from, int toDirectory, const char *to) {
#if defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, fromDirectory, from, toDirectory, to, RENAME_NOREPLACE);
#else
    errno = ENOSYS;
    return -1;
#endif
}

#elif defined(__APPLE__)
#include <stdio.h>

int jobkit_rename_noreplace(int fromDirectory, const char *from, int toDirectory, const char *to) {
    return renameatx_np(fromDirectory, from, toDirectory, to, RENAME_EXCL);
}

#else

int jobkit_rename_noreplace(int fromDirectory, const char *from, int toDirectory, const char *to) {
    (void)fromDirectory;
    (void)from;
    (void)toDirectory;
    (void)to;
    errno = ENOSYS;
    return -1;
}

#endif
