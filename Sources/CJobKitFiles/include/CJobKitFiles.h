#ifndef CJOBKITFILES_H
#define CJOBKITFILES_H

/// Renames `from` (relative to the directory `fromDirectory`) to `to` (relative to `toDirectory`)
/// only if nothing is under `to`: one atomic step that never replaces. Linux: renameat2 with
/// RENAME_NOREPLACE; Apple platforms: renameatx_np with RENAME_EXCL.
///
/// Returns 0, or -1 with errno set: EEXIST when something is under `to`; EINVAL, ENOSYS or ENOTSUP
/// when the file system or kernel cannot rename without replacing (the caller falls back).
int jobkit_rename_noreplace(int fromDirectory, const char *from, int toDirectory, const char *to);

#endif
