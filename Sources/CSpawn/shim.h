// posix_spawn's GNU extensions (glibc 2.29 and 2.34) and pipe2, which Swift's Glibc module does not
// declare (they need _GNU_SOURCE). Used by PushgateTesting to start the pushgate binary without
// Foundation's Process, whose Linux implementation over-reads /proc/self/fd entries and crashes
// now and then (swift-corelibs-foundation PR #5472, fixed after Swift 6.3.1).
#include <spawn.h>

int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *__restrict actions, const char *__restrict path);
int pipe2(int pipefd[2], int flags);
