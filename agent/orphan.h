/*
 * orphan.h - a supervisor's notice that its agent is gone and its ranks
 * are dead (docs/fault-tolerance.md "An agent that dies")
 */
#ifndef AGENT_ORPHAN_H
#define AGENT_ORPHAN_H

#include <stddef.h>

#include "agent/supfile.h"

/* How many times the notice is sent, and how far apart: it is one UDP
 * datagram, which the network may drop; the scheduler takes the first. */
#define ORPHAN_NOTICE_TRIES 5
#define ORPHAN_NOTICE_GAP_MS 200

/*
 * Send the scheduler named in jobs_dir/scheduler.addr the fence notice of
 * spec's attempt (common/fence.h), signed with spec->fence_key, up to
 * ORPHAN_NOTICE_TRIES times (blocking, ORPHAN_NOTICE_GAP_MS apart). where
 * (wlen bytes) gets "<ip> port <port>" for the log. 0 when at least one
 * datagram left; -ENOENT when there is no address (the agent reached
 * the scheduler over a Unix socket only, or never), -EINVAL when spec has
 * no fence key or the address is damaged, else -errno of the send.
 */
int orphan_notice_send(const char *jobs_dir, const struct supfile_spec *spec,
    char *where, size_t wlen);

#endif
