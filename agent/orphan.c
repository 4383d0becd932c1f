/*
 * orphan.c - a supervisor's notice that its agent is gone
 */
#include "agent/orphan.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fence.h"

int
orphan_notice_send(const char *jobs_dir, const struct supfile_spec *spec,
    char *where, size_t wlen)
{
    struct addrinfo hints = { .ai_socktype = SOCK_DGRAM,
        .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
    struct fence_notice n = { .job = spec->job, .attempt = spec->attempt };
    struct addrinfo *ai = NULL;
    char ip[64], port_s[16], buf[FENCE_MSG_MAX];
    int port, fd, rc, sent = 0;
    size_t len;

    snprintf(where, wlen, "(nowhere)");
    if (spec->fence_key[0] == '\0' || spec->node[0] == '\0')
        return -EINVAL;
    if ((rc = supfile_sched_addr_read(jobs_dir, ip, sizeof(ip), &port)) < 0)
        return rc;
    snprintf(where, wlen, "%s port %d", ip, port);
    snprintf(port_s, sizeof(port_s), "%d", port);
    if (getaddrinfo(ip, port_s, &hints, &ai) != 0 || ai == NULL)
        return -EINVAL;
    fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rc = -errno;
        freeaddrinfo(ai);
        return rc;
    }
    memcpy(n.node, spec->node, strlen(spec->node) + 1);
    len = fence_notice_encode(spec->fence_key, &n, buf);
    rc = 0;
    for (int i = 0; i < ORPHAN_NOTICE_TRIES; i++) {
        if (i > 0)
            poll(NULL, 0, ORPHAN_NOTICE_GAP_MS);
        if (sendto(fd, buf, len, 0, ai->ai_addr, ai->ai_addrlen) ==
            (ssize_t)len)
            sent++;
        else
            rc = -errno;
    }
    close(fd);
    freeaddrinfo(ai);
    return sent > 0 ? 0 : rc;
}
