/* listen.c - the connections of `pocketdec serve` taken from its listening
 * socket, by the server's own thread rather than libmicrohttpd's: 0.9.75
 * accepts every connection and closes at once one over its limits, which a
 * client cannot tell from a crash and which, with clients that reconnect at
 * once, turns into a storm of accepts and resets (issue 64). Here:
 * - over --max-connections a connection is not accepted: it waits in the
 *   listen backlog until a connection closes (the kernel holds it);
 * - over --max-per-client (0: off) it is accepted and, a second later,
 *   answered 503 with Retry-After: 1, without a thread, and closed after its
 *   client has read it (a lingering close: closing over unread bytes would
 *   reset it). The second is the Retry-After kept by the server: a client
 *   that reconnects at once costs it one accept a second, not a storm.
 * Accepted connections are handed to libmicrohttpd (MHD_add_connection). */
#define _GNU_SOURCE /* accept4 */
#include "jobs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HOLD_S 1.0   /* a refused connection is answered after this */
#define LINGER_S 2.0 /* and closed at its client's EOF or this after its answer */

int serve_listen_open(const serve_config *cfg, int *port, char *msg, size_t msg_size)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    socklen_t len;
    if (inet_pton(AF_INET, cfg->host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)cfg->port);
        len = sizeof *v4;
    } else if (inet_pton(AF_INET6, cfg->host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)cfg->port);
        len = sizeof *v6;
    } else {
        snprintf(msg, msg_size, "--host %s: not an IPv4 or IPv6 address", cfg->host);
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;
    if (fd >= 0) {
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (ss.ss_family == AF_INET6) (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    }
    /* the backlog is where connections over --max-connections wait */
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) || listen(fd, SOMAXCONN) ||
        getsockname(fd, (struct sockaddr *)&ss, &len)) {
        snprintf(msg, msg_size, "cannot listen on %s port %d: %s (in use, or not an address of this machine?)",
                 cfg->host, cfg->port, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    *port = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
    return fd;
}

/* Whether a and b are the same client: the same address, any port. */
static bool same_client(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family) return false;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                  sizeof(struct in6_addr)) == 0;
}

/* Connections open from addr's client (mutex held). */
static int32_t client_conns(const server *s, const struct sockaddr_storage *addr)
{
    int32_t n = 0;
    for (const conn *k = s->conns; k; k = k->next) n += same_client(&k->addr, addr);
    return n;
}

/* fd's 503, sent without reading its request; the end of what it sends. */
static void answer_503(int fd)
{
    static const char body[] = "{\"error\":\"this client has --max-per-client connections open already; "
                               "retry after one closes\"}";
    char answer[384];
    int n = snprintf(answer, sizeof answer,
                     "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     sizeof body - 1, body);
    (void)!send(fd, answer, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
}

/* fd refused: held, answered and closed by the sweep (mutex held). */
static void refuse(server *s, int fd)
{
    s->refused++;
    if (s->n_lingering == SERVE_MAX_LINGERING) { /* no room to hold it */
        answer_503(fd);
        close(fd);
        return;
    }
    s->lingering[s->n_lingering++] = (lingering){fd, serve_now(), false};
}

void serve_linger_sweep(server *s, bool all)
{
    char sink[4096];
    double now = serve_now();
    size_t kept = 0;
    for (size_t i = 0; i < s->n_lingering; i++) {
        lingering l = s->lingering[i];
        ssize_t got;
        while ((got = recv(l.fd, sink, sizeof sink, MSG_DONTWAIT)) > 0) continue; /* its request, unread */
        bool open = got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
        if (open && !l.answered && (all || now - l.since >= HOLD_S)) {
            answer_503(l.fd);
            l.answered = true;
            l.since = now;
        }
        if (open && !all && now - l.since < (l.answered ? LINGER_S : HOLD_S)) s->lingering[kept++] = l;
        else close(l.fd);
    }
    s->n_lingering = kept;
}

static void *acceptor_main(void *arg)
{
    server *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        /* at the limit: leave the next connection in the backlog until one closes */
        while (!s->draining && s->n_conns >= s->cfg->max_connections) pthread_cond_wait(&s->conn_freed, &s->mu);
        bool stop = s->draining;
        pthread_mutex_unlock(&s->mu);
        if (stop) return NULL;
        struct pollfd p = {s->listen_fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue; /* 100 ms: the drain is seen within it */
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = accept4(s->listen_fd, (struct sockaddr *)&addr, &len, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                struct timespec pause = {0, 10 * 1000 * 1000}; /* out of descriptors: the backlog holds it */
                nanosleep(&pause, NULL);
            }
            continue;
        }
        pthread_mutex_lock(&s->mu);
        conn *k = NULL;
        if (s->cfg->max_per_client > 0 && client_conns(s, &addr) >= s->cfg->max_per_client) refuse(s, fd);
        else if (!(k = serve_conn_open(s, fd, &addr))) close(fd);
        pthread_mutex_unlock(&s->mu);
        if (k && MHD_add_connection(s->daemon, fd, (struct sockaddr *)&addr, len) != MHD_YES) {
            pthread_mutex_lock(&s->mu); /* the library closed fd */
            serve_conn_close(s, k);
            pthread_mutex_unlock(&s->mu);
        }
    }
}

int serve_acceptor_start(server *s)
{
    if (pthread_create(&s->acceptor, NULL, acceptor_main, s)) return 1;
    s->acceptor_running = true;
    return 0;
}

void serve_acceptor_stop(server *s)
{
    pthread_mutex_lock(&s->mu);
    s->draining = true;
    pthread_cond_broadcast(&s->conn_freed);
    pthread_mutex_unlock(&s->mu);
    if (s->acceptor_running) pthread_join(s->acceptor, NULL);
    s->acceptor_running = false;
    if (s->listen_fd >= 0) close(s->listen_fd); /* new connections are refused from now */
    s->listen_fd = -1;
}
