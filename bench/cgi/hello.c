// The benchmark's CGI program: a 1 KiB body with its length, in one write, nothing read.
// Compiled by bench/cgi.sh (cc -O2, dynamically linked: as a program of a site would be).
#include <string.h>
#include <unistd.h>

#define BODY 1024

int main(void) {
  static const char head[] =
      "Content-Type: application/octet-stream\r\nContent-Length: 1024\r\n\r\n";
  static const char pattern[] = "flint-bench-0123456789abcdefghijklmnopqrstuvwxyz\n";
  char out[sizeof head - 1 + BODY];
  memcpy(out, head, sizeof head - 1);
  for (size_t i = 0; i < BODY; i++) out[sizeof head - 1 + i] = pattern[i % (sizeof pattern - 1)];
  size_t off = 0;
  while (off < sizeof out) {
    ssize_t n = write(1, out + off, sizeof out - off);
    if (n <= 0) return 1;
    off += (size_t)n;
  }
  return 0;
}
