/* slow_client — a client that stops reading, for the slow-reader tests (tests/server/slow.mjs): it connects
 * to 127.0.0.1:PORT with a receive buffer of RCVBUF bytes (SO_RCVBUF, set before connect so that the TCP
 * window stays small: node cannot do this, and a node socket that merely pauses lets Linux grow its buffer
 * to megabytes, which a token stream on the tiny model takes minutes to fill), writes the bytes of
 * REQUEST_FILE (an HTTP request, or a WebSocket upgrade followed by masked frames), and then reads nothing
 * until a line arrives on stdin. After that line it copies every byte the socket gives to stdout until the
 * server closes the connection or stdin closes.
 *
 *   slow_client PORT RCVBUF REQUEST_FILE
 *
 * stderr says "sent" once the request is written and "rcvbuf N" with the size the kernel granted. Exit 0, or
 * 1 with the reason on stderr. A test tool, not a test: it asserts nothing. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Writes all n bytes of p to fd; 0, or -1 with errno. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The whole file (malloc'd), its length in *n; NULL when unreadable. */
static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)len + 1);
        if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
            free(buf);
            buf = NULL;
        }
        *n = (size_t)len;
    }
    fclose(f);
    return buf;
}

/* Copies the socket to stdout until either side closes. */
static int pump(int sock)
{
    char buf[65536];
    struct pollfd p[2] = {{sock, POLLIN, 0}, {0, POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (p[1].revents) { /* stdin: more input or its end both mean stop */
            char junk[256];
            if (read(0, junk, sizeof junk) <= 0) return 0;
        }
        if (p[0].revents) {
            ssize_t r = read(sock, buf, sizeof buf);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return 0;
            if (write_all(1, buf, (size_t)r)) return -1;
        }
    }
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr;
    int sock, rcv, got = 0, rc = 1;
    socklen_t len = sizeof got;
    size_t n = 0;
    char *req, line[64];
    if (argc != 4) {
        fprintf(stderr, "usage: slow_client PORT RCVBUF REQUEST_FILE\n");
        return 1;
    }
    rcv = atoi(argv[2]);
    if (!(req = read_file(argv[3], &n))) {
        fprintf(stderr, "slow_client: cannot read %s\n", argv[3]);
        return 1;
    }
    sock = socket(AF_INET, SOCK_STREAM, 0);
    if (sock < 0 || setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv)) {
        perror("slow_client: socket");
        goto out;
    }
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)atoi(argv[1]));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(sock, (struct sockaddr *)&addr, sizeof addr)) {
        perror("slow_client: connect");
        goto out;
    }
    if (write_all(sock, req, n)) {
        perror("slow_client: write");
        goto out;
    }
    getsockopt(sock, SOL_SOCKET, SO_RCVBUF, &got, &len);
    fprintf(stderr, "sent\nrcvbuf %d\n", got);
    if (!fgets(line, sizeof line, stdin)) { /* stdin closed before the go: leave without reading */
        rc = 0;
        goto out;
    }
    rc = pump(sock) ? 1 : 0;
out:
    if (sock >= 0) close(sock);
    free(req);
    return rc;
}
