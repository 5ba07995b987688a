// The workspace's .git in a jail (Mount::Kind::git): git can commit, check
// out and fetch, while nothing the jail does reaches the host's .git but
// what brig checks and writes back when the jail ends.
//
// git updates its state files (index, HEAD, packed-refs, …) by writing
// `<name>.lock` beside them and renaming it over, so the top level of .git
// must take new names; but any new name there (commondir, config.worktree,
// hooks/) redirects the host's git, and what git writes in objects/, refs/
// and logs/ is followed by the host's git (a symlink in refs/ or logs/ makes
// it write anywhere, a fifo makes it hang). So the jail gets an overlay: the
// host's .git below, read-only, and a private tmpfs layer above that takes
// every write. Over the overlay, every other existing entry (config, hooks/,
// info/, modules/, worktrees/, objects/info, …) is the host's own, bound
// read-only, so writing it fails as before. When the jail ends, its init
// merges back what git would write and nothing else (git_write_back.cc):
// new loose objects whose SHA-1 is their name (never packs), refs and
// reflogs with valid names and contents, and the state files in kStateFiles whose contents pass
// git's own rules (the index through git_index_check.h), each under git's lock protocol. Everything
// else in the private layer goes with the jail.
#pragma once

namespace brig::jail::git_state {

// Top-level names git replaces by lock and rename, and that hold only data
// git parses (gitrepository-layout(5)); what the jail did to them is checked
// and written back (git_write_back.cc). Not sequencer state (rebase-merge/,
// sequencer/: its todo list holds commands, `exec`, that `git rebase
// --continue` would run on the host), nor rerere's MERGE_RR (paths the
// host's rerere would copy into .git).
inline constexpr const char* kStateFiles[] = {
    "index",       "HEAD",           "ORIG_HEAD",   "FETCH_HEAD",       "MERGE_HEAD",  "MERGE_MODE",
    "MERGE_MSG",   "AUTO_MERGE",     "REVERT_HEAD", "CHERRY_PICK_HEAD", "REBASE_HEAD", "SQUASH_MSG",
    "TAG_EDITMSG", "COMMIT_EDITMSG", "packed-refs", "shallow",
};

// Top-level directories whose new entries are merged back one by one; the
// overlay shows the host's, and every other directory is bound read-only.
inline constexpr const char* kStateDirs[] = {"objects", "refs", "logs"};

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

// The init, once the jail's processes are gone: merges the private layer
// back (git_write_back.cc). Each file is copied into `<name>.lock` (or a
// temporary name for objects) in the host's .git, opened without following
// symlinks, checked there (where nothing of the jail can change it any
// more) and renamed over; objects never replace one that exists. Returns
// how many it refused or could not write (a lock held too long, a name or
// content git would not write, an I/O error). Async-signal-safe.
int write_back_in_child(const Kept& kept);

}  // namespace brig::jail::git_state
