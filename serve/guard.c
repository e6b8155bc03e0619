/* guard.c - the connections of `pocketdec serve` kept from holding the server:
 * libmicrohttpd 0.9.75 closes a connection only when it has been silent for
 * its timeout, so a client sending a byte every few seconds (a slowloris)
 * would keep a connection, and its thread, for ever. Every connection is
 * listed here with the part of a request it is in; the sweep (every 100 ms,
 * from serve_run's thread) shuts the ones too slow: headers not complete
 * within --idle-timeout, a body averaging under --min-rate after its first
 * second, an answer not taken at --min-rate. On a new connection, or in a
 * body, it first writes a 408 itself (the connection's thread is waiting on
 * the socket and writes nothing until a request is complete). */
#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#define GRACE_S 1.0 /* a body's first second is not held to --min-rate */

conn *serve_conn_open(server *s, int fd, const struct sockaddr_storage *addr)
{
    conn *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->fd = fd;
    k->addr = *addr;
    k->phase = CONN_HEADERS;
    k->fresh = true;
    k->since = serve_now();
    k->next = s->conns;
    if (s->conns) s->conns->prev = k;
    s->conns = k;
    s->fresh++;
    s->accepted++;
    if (++s->n_conns > s->peak_conns) s->peak_conns = s->n_conns;
    return k;
}

conn *serve_conn_attach(server *s, int fd)
{
    for (conn *k = s->conns; k; k = k->next)
        if (k->fd == fd && !k->attached) {
            k->attached = true;
            return k;
        }
    return NULL;
}

void serve_conn_close(server *s, conn *k)
{
    if (k->fresh) s->fresh--;
    if (k->prev) k->prev->next = k->next;
    else s->conns = k->next;
    if (k->next) k->next->prev = k->prev;
    s->n_conns--;
    free(k);
    pthread_cond_signal(&s->conn_freed);
}

/* Whether k is too slow for its phase at time now. Bytes the client has sent
 * that the server has not read yet are the server's lag, not the client's. */
static bool too_slow(const server *s, const conn *k, double now)
{
    int unread = 0;
    if ((k->phase == CONN_HEADERS || k->phase == CONN_BODY) && ioctl(k->fd, FIONREAD, &unread) == 0 && unread > 0)
        return false;
    double t = now - k->since, idle = s->cfg->idle_timeout_s, rate = s->cfg->min_rate;
    switch (k->phase) {
    case CONN_HEADERS: return t > idle;
    case CONN_BODY: return rate > 0 && t > GRACE_S && (double)k->bytes < rate * (t - GRACE_S);
    case CONN_SENDING: return rate > 0 && t > idle + (double)k->bytes / rate;
    default: return false; /* CONN_ANSWER: the engine's, bounded by --timeout */
    }
}

void serve_sweep(server *s)
{
    static const char body[] = "{\"error\":\"the request came too slowly (--idle-timeout, --min-rate)\"}";
    char answer[256];
    int n = snprintf(answer, sizeof answer,
                     "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     sizeof body - 1, body);
    double now = serve_now();
    for (conn *k = s->conns, *next; k; k = next) {
        next = k->next;
        if (!k->attached) { /* handed to the library, which has not told of it yet */
            if (now - k->since > s->cfg->idle_timeout_s) serve_conn_close(s, k); /* it never will: it failed */
            continue;
        }
        if (k->dropped || !too_slow(s, k, now)) continue;
        /* the list is under the mutex and the library tells us of a close
         * (serve_conn_close) before it closes the socket: k->fd is still k's */
        /* a 408 where nothing of an answer was sent, but not on a kept-alive
         * connection between requests: its client may only be idle, and would
         * read the 408 as the answer to its next request */
        if (k->phase == CONN_BODY || (k->phase == CONN_HEADERS && k->fresh)) {
            (void)!send(k->fd, answer, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
            serve_count(s, EP_OTHER, 408, now - k->since);
        }
        shutdown(k->fd, SHUT_RDWR); /* the connection's thread sees the end and closes it */
        k->dropped = true;
        s->dropped++;
    }
    serve_linger_sweep(s, false);
}
