// spawn: what starting a program costs a process with a large heap, three ways.
//
//   spawn MIB STARTS ROUNDS PROGRAM
//
// Maps MIB MiB of anonymous memory and writes every page (4 KiB pages: MADV_NOHUGEPAGE, so the
// page tables are those of a malloc heap of that size), then, ROUNDS times, starts PROGRAM
// STARTS/ROUNDS times with each of:
//   posix_spawn  glibc's: clone(CLONE_VM | CLONE_VFORK) on its own stack, then execve: what
//                flint serve does (Rust's std::process::Command takes this path);
//   vfork        vfork() + execve: the same sharing, by hand;
//   fork         fork() + execve: what a forking server does (Apache's mod_cgid daemon, lighttpd,
//                fcgiwrap): the child gets a copy of the parent's page tables, which execve
//                then throws away.
// Each start is waited for (the next begins when the program has exited). The modes alternate
// within each round. Prints, per mode, the median over rounds of: wall time per start, the
// parent's CPU per start (getrusage SELF: fork's copy of the page tables is here), the
// children's (getrusage CHILDREN: the exec, the program, and a forked child's teardown of its
// copy). Run it pinned to one core (bench/spawn.sh does): wall time is then all of it.
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum mode { SPAWN, VFORK, FORK, MODES };
static const char *const names[MODES] = {"posix_spawn", "vfork", "fork"};

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double tv_us(struct timeval t) { return t.tv_sec * 1e6 + t.tv_usec; }

static double cpu_us(int who) {
  struct rusage ru;
  getrusage(who, &ru);
  return tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
}

static void start_one(enum mode m, char *const argv[]) {
  pid_t pid = -1;
  if (m == SPAWN) {
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) pid = -1;
  } else {
    pid = m == VFORK ? vfork() : fork();
    if (pid == 0) {
      execve(argv[0], argv, environ);
      _exit(127);
    }
  }
  if (pid < 0) {
    perror("spawn: start");
    exit(1);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "spawn: %s did not exit with 0\n", argv[0]);
    exit(1);
  }
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: spawn MIB STARTS ROUNDS PROGRAM\n");
    return 2;
  }
  long mib = atol(argv[1]), starts = atol(argv[2]), rounds = atol(argv[3]);
  if (mib < 0 || starts < 1 || rounds < 1 || starts % rounds) {
    fprintf(stderr, "spawn: MIB >= 0, STARTS >= 1, ROUNDS >= 1 dividing STARTS\n");
    return 2;
  }
  size_t bytes = (size_t)mib << 20;
  if (bytes) {
    char *heap = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (heap == MAP_FAILED) {
      perror("spawn: mmap");
      return 1;
    }
    madvise(heap, bytes, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < bytes; i += 4096) heap[i] = (char)i;
  }
  char *const child_argv[] = {argv[4], NULL};
  long per_round = starts / rounds;
  double *wall = calloc((size_t)(MODES * rounds), sizeof(double));
  double *self = calloc((size_t)(MODES * rounds), sizeof(double));
  double *kids = calloc((size_t)(MODES * rounds), sizeof(double));
  if (!wall || !self || !kids) return 1;
  start_one(SPAWN, child_argv);  // warm: the program's pages in the page cache
  for (long r = 0; r < rounds; r++) {
    for (int m = 0; m < MODES; m++) {
      double w0 = now_us(), s0 = cpu_us(RUSAGE_SELF), k0 = cpu_us(RUSAGE_CHILDREN);
      for (long i = 0; i < per_round; i++) start_one((enum mode)m, child_argv);
      wall[m * rounds + r] = (now_us() - w0) / per_round;
      self[m * rounds + r] = (cpu_us(RUSAGE_SELF) - s0) / per_round;
      kids[m * rounds + r] = (cpu_us(RUSAGE_CHILDREN) - k0) / per_round;
    }
  }
  for (int m = 0; m < MODES; m++) {
    printf("%s %ld %ld %.1f %.1f %.1f\n", names[m], mib, starts,
           median(wall + m * rounds, (int)rounds), median(self + m * rounds, (int)rounds),
           median(kids + m * rounds, (int)rounds));
  }
  return 0;
}
