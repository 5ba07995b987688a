// The workspace's .git in a jail (Mount::Kind::git): git can commit, check
// out and fetch, while nothing git reads as configuration or as a pointer can
// be changed or added on the host.
//
// git updates its state files (index, HEAD, packed-refs, …) by writing
// `<name>.lock` beside them and renaming it over, so the top level of .git
// must take new names; but any new name there (commondir, config.worktree,
// hooks/) redirects the host's git. So the jail gets an overlay: the host's
// .git below, read-only, and a private tmpfs layer above that takes every
// write at the top level. On top of the overlay, objects/, refs/, logs/,
// reftable/ and lfs/ are the host's own directories, read-write (git writes
// in them in place; what they hold is data), objects/info is read-only (the
// alternates file), and every other existing entry (config, hooks/, info/,
// modules/, worktrees/, …) is bound read-only, so writing it fails as before.
// When the jail ends, the init copies back only the state files named in
// kStateFiles that the jail changed, by git's own lock protocol; everything
// else in the private layer goes with the jail.
#pragma once

namespace brig::jail::git_state {

// Top-level names git replaces by lock and rename, and that hold only data
// git parses (gitrepository-layout(5)); what the jail did to them is written
// back. Sequencer state (rebase-merge/, sequencer/) is not: its todo list
// holds commands (`exec`) that `git rebase --continue` would run on the host.
inline constexpr const char* kStateFiles[] = {
    "index",      "HEAD",        "ORIG_HEAD",      "FETCH_HEAD",       "MERGE_HEAD",  "MERGE_MODE",
    "MERGE_MSG",  "MERGE_RR",    "AUTO_MERGE",     "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD",
    "SQUASH_MSG", "TAG_EDITMSG", "COMMIT_EDITMSG", "packed-refs",      "shallow",
};

// Top-level directories git writes in place: the host's own, read-write.
inline constexpr const char* kStateDirs[] = {"objects", "refs", "logs", "reftable", "lfs"};

// What the init keeps from the mount to the write-back. Both fds are
// O_CLOEXEC: the command never holds them.
struct Kept {
  int real = -1;           // the host's .git (O_PATH), under the overlay
  int upper = -1;          // the private layer: what the jail changed at the top level
  int fallback_errno = 0;  // the overlay could not be made; .git is read-only as a whole
};

// Child side, during the mount plan. `path` is the .git directory in the
// child's view (/newroot/<workspace>/.git, under a read-write bind),
// `scratch` a directory brig makes in its scratch root for the layers, and
// `tmpfs_data` the private layer's mount options. Every path in the
// workspace is opened without following symlinks. When the kernel refuses
// the overlay (an old kernel, no overlayfs), .git is bound read-only as a
// whole instead and fallback_errno says why; an error is returned only when
// even that fails. ENOENT: there is no .git directory (any more).
// Async-signal-safe.
int mount_in_child(const char* path, const char* scratch, const char* tmpfs_data, Kept* kept);

// The init, once the jail's processes are gone: for each state file the jail
// wrote, takes `<name>.lock` in the host's .git (O_EXCL, as git does; waits
// briefly for another git holding it), copies the file into it and renames
// it over; a state file the jail deleted is deleted. Returns how many it
// could not write back (a lock held too long, a state name the jail made
// into something other than a regular file, an I/O error). Async-signal-safe.
int write_back_in_child(const Kept& kept);

}  // namespace brig::jail::git_state
