// rusage: run a command pinned to one CPU and report its own CPU time and peak RSS.
//
//   rusage CPU TIMEOUT_S OUTFILE CMD [ARG...]
//
// Why not wait4 from Python directly: Linux keeps, in ru_maxrss, the peak RSS of the memory image
// a process had before each exec. A child forked (or vforked) from Python starts with Python's
// ~10 MB image, so its ru_maxrss can never read below that, and a client's memory per connection
// would be lost in it. This launcher is small: the child it forks starts with a few hundred KiB.
//
// Writes "utime_us stime_us maxrss_kib exit_status" to OUTFILE; exits with the command's status
// (128+signal if killed). After TIMEOUT_S seconds the command is killed (SIGKILL); SIGINT and
// SIGTERM are passed on to it.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child;

static void on_alarm(int sig) { (void)sig; if (child > 0) kill(child, SIGKILL); }
static void forward(int sig) { if (child > 0) kill(child, sig); }

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: rusage CPU TIMEOUT_S OUTFILE CMD [ARG...]\n");
    return 2;
  }
  int cpu = atoi(argv[1]);
  unsigned timeout = (unsigned)atoi(argv[2]);
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) { perror("rusage: sched_setaffinity"); return 2; }
  }
  FILE *out = fopen(argv[3], "w");
  if (!out) { perror("rusage: OUTFILE"); return 2; }
  child = fork();
  if (child < 0) { perror("rusage: fork"); return 2; }
  if (child == 0) {
    execvp(argv[4], argv + 4);
    fprintf(stderr, "rusage: cannot run %s: ", argv[4]);
    perror("");
    _exit(127);
  }
  signal(SIGALRM, on_alarm);
  signal(SIGINT, forward);
  signal(SIGTERM, forward);
  if (timeout) alarm(timeout);
  int status;
  struct rusage ru;
  pid_t r;
  while ((r = wait4(child, &status, 0, &ru)) < 0 && errno == EINTR) {}
  if (r < 0) { perror("rusage: wait4"); return 2; }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  fprintf(out, "%lld %lld %ld %d\n",
          (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
          (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, ru.ru_maxrss, code);
  fclose(out);
  return code;
}
