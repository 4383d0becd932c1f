/*
 * pinger.h - the agent's lease pings: short leases for a busy node
 *
 * While supervisors hold leases and the scheduler asks for it (ping_ms in
 * its status replies), the agent sends a lease ping (common/leaseping.h)
 * every ping_ms to the scheduler's UDP port: the address its last status
 * was answered from over TCP; idle, one every 10 s, so that the
 * scheduler knows its pings arrive before it runs anything. An answer to a ping
 * sent at t renews every lease to t + the lease it grants, as a status reply
 * does (proc_lease_granted), and is a success for the witness rule
 * (witness_renewed). The scheduler grants short leases only to nodes
 * whose pings it hears, so a node whose pings are lost or refused goes on
 * with statuses and the long lease (docs/fault-tolerance.md "Short leases
 * for busy nodes").
 */
#ifndef AGENT_PINGER_H
#define AGENT_PINGER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

struct agentd;
struct pinger;

struct pinger *pinger_create(struct agentd *ad, struct err *err);
/* The scheduler asks for a ping every ping_ms (0: none). */
void pinger_configure(struct pinger *p, int64_t ping_ms);
/* Whether pings renew the leases now: one was answered within the
 * current lease. Statuses then need not come faster than heartbeat_ms
 * for the leases' sake. Accepts NULL. */
bool pinger_renewing(const struct pinger *p);
/*
 * The agent stops on purpose (SIGTERM: an upgrade): while pings renew the
 * leases, ask the scheduler for the long lease instead ("stop" pings,
 * PINGER_STOP_TRIES of them 100 ms apart at most), so that the next agent
 * has lease_ms, not short_lease_ms, to take the ranks over; then call
 * done(arg). False (done not called) when there is nothing to ask for.
 */
bool pinger_handover(struct pinger *p, void (*done)(void *arg), void *arg);
/* Accepts NULL. */
void pinger_destroy(struct pinger *p);

#endif
