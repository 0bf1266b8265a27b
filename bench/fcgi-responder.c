// fcgi-responder: the smallest FastCGI responder worth measuring a server against.
//
//   fcgi-responder SOCKET_PATH WORKERS BODY_BYTES
//
// Listens on a unix socket, forks WORKERS processes that each accept one connection at a time
// (as a php-fpm static pool does) and answer every request on it with a fixed CGI response:
// `Content-Type` and `Content-Length` heads and BODY_BYTES of body, in one write of three
// records (STDOUT with the response, the empty STDOUT that ends the stream, END_REQUEST). It
// honours FCGI_KEEP_CONN (the connection stays open for the next request, else it is closed),
// ignores the PARAMS and reads STDIN to its end before answering, as a responder must. Written
// against the FastCGI 1.0 specification; no library, so the application's own cost per request
// is a read and a write, and what a benchmark sees beyond that is the server's.
//
// The parent waits; SIGTERM or SIGINT to it stops every worker (each also dies with it:
// PR_SET_PDEATHSIG), so the script stops the whole application by the parent's PID.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

enum { BEGIN_REQUEST = 1, ABORT_REQUEST = 2, END_REQUEST = 3, PARAMS = 4, STDIN_ = 5, STDOUT_ = 6 };
enum { KEEP_CONN = 1, HEADER = 8, MAX_WORKERS = 1024 };

static pid_t workers[MAX_WORKERS];
static int nworkers;

static void header(unsigned char *h, int type, int id, int len) {
    h[0] = 1, h[1] = (unsigned char)type, h[2] = (unsigned char)(id >> 8), h[3] = (unsigned char)id;
    h[4] = (unsigned char)(len >> 8), h[5] = (unsigned char)len, h[6] = 0, h[7] = 0;
}

// The answer to one request, built once per request id (the id is in every record header).
static unsigned char *answer;
static size_t answer_len, stdout_len;

static void build_answer(int body_bytes) {
    char head[128];
    int hl = snprintf(head, sizeof head, "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n",
                      body_bytes);
    stdout_len = (size_t)hl + (size_t)body_bytes;
    answer_len = HEADER + stdout_len + HEADER + HEADER + 8;
    answer = calloc(1, answer_len);
    if (!answer) { perror("fcgi-responder: calloc"); exit(1); }
    memcpy(answer + HEADER, head, (size_t)hl);
    memset(answer + HEADER + hl, 'x', (size_t)body_bytes);
}

static int write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

static int respond(int fd, int id) {
    unsigned char *p = answer;
    header(p, STDOUT_, id, (int)stdout_len);
    p += HEADER + stdout_len;
    header(p, STDOUT_, id, 0);
    p += HEADER;
    header(p, END_REQUEST, id, 8);  // appStatus 0, REQUEST_COMPLETE (0): already zero
    return write_all(fd, answer, answer_len);
}

// One connection, request after request, until the server closes it or drops FCGI_KEEP_CONN.
static void serve(int fd) {
    static unsigned char buf[HEADER + 65535 + 255];
    size_t have = 0;
    int keep = 0;
    for (;;) {
        while (have >= HEADER) {
            size_t len = ((size_t)buf[4] << 8 | buf[5]) + buf[6];
            if (have < HEADER + len) break;
            int type = buf[1], id = buf[2] << 8 | buf[3];
            size_t content = (size_t)buf[4] << 8 | buf[5];
            if (type == BEGIN_REQUEST && content >= 8) keep = buf[HEADER + 2] & KEEP_CONN;
            if (type == STDIN_ && content == 0) {
                if (respond(fd, id) < 0 || !keep) return;
            } else if (type == ABORT_REQUEST) {
                unsigned char end[HEADER + 8] = {0};  // REQUEST_COMPLETE, nothing more
                header(end, END_REQUEST, id, 8);
                if (write_all(fd, end, sizeof end) < 0 || !keep) return;
            }
            have -= HEADER + len;
            memmove(buf, buf + HEADER + len, have);
        }
        ssize_t r = read(fd, buf + have, sizeof buf - have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return;
        have += (size_t)r;
    }
}

static void stop_all(int sig) {
    for (int i = 0; i < nworkers; i++) kill(workers[i], SIGTERM);
    signal(sig, SIG_DFL);
    while (wait(NULL) > 0) {}
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: fcgi-responder SOCKET_PATH WORKERS BODY_BYTES\n");
        return 2;
    }
    int n = atoi(argv[2]), body = atoi(argv[3]);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (n < 1 || n > MAX_WORKERS || body < 0 || body > 60000 ||
        strlen(argv[1]) >= sizeof sa.sun_path) {
        fprintf(stderr, "fcgi-responder: WORKERS 1 to %d, BODY_BYTES 0 to 60000, a short path\n",
                MAX_WORKERS);
        return 2;
    }
    build_answer(body);
    strcpy(sa.sun_path, argv[1]);
    unlink(argv[1]);
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 511)) {
        perror("fcgi-responder: socket");
        return 1;
    }
    chmod(argv[1], 0666);  // a server that drops to another user (h2o as root) connects too
    signal(SIGTERM, stop_all);
    signal(SIGINT, stop_all);
    // A server closes a connection whose client left mid-request (nginx does, at the end of
    // every wrk run): the write then fails with EPIPE and the worker takes its next connection.
    // Killed by SIGPIPE instead, it would be gone for good and the pool would shrink run by run.
    signal(SIGPIPE, SIG_IGN);
    pid_t parent = getpid();
    for (nworkers = 0; nworkers < n; nworkers++) {
        pid_t pid = fork();
        if (pid < 0) { perror("fcgi-responder: fork"); stop_all(SIGTERM); }
        if (pid == 0) {
            signal(SIGTERM, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != parent) _exit(0);
            for (;;) {
                int fd = accept(ls, NULL, NULL);
                if (fd < 0) continue;
                serve(fd);
                close(fd);
            }
        }
        workers[nworkers] = pid;
    }
    for (;;) pause();
}
